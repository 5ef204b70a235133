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
