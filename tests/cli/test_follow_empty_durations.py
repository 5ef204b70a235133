"""An empty --window, --poll-interval or --settle is bad usage, as an empty --since is.

`--window "$WINDOW"` with the variable unset followed with the 10-minute default
without a word, where the user meant another window (docs/cli.md refuses an empty
`--since` for the same reason).
"""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("option", ["--window", "--poll-interval", "--settle"])
def test_an_empty_follow_duration_is_a_usage_error(option: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ridtrace", "analyze", "-", "--follow", option, ""],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert f"Invalid value for {option}" in done.stderr


@pytest.mark.parametrize("given", ["1d", "10min", "1e3"])
def test_a_duration_refused_says_the_forms_taken(given: str) -> None:
    # "not a positive duration: '1d'" left the user to guess what is one.
    from click.testing import CliRunner

    from ridtrace.cli.main import main

    done = CliRunner().invoke(main, ["analyze", "-", "--follow", "--window", given])
    assert done.exit_code == 2
    assert "(a number of seconds, or one with ms, s, m or h: 250ms, 90s, 10m, 1h)" in " ".join(
        done.output.split())
