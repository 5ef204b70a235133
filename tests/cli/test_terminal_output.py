"""What the text views print on a real terminal: its width, and colour only when wanted."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ridtrace.testing.synth import SynthSpec, SynthTruth, write_logs
from tests.support.terminal import run_on_terminal


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SynthTruth]:
    out = tmp_path_factory.mktemp("logs")
    return out, write_logs(out, SynthSpec(requests=120, deprecated_every=20))


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _collided(truth: SynthTruth) -> str:
    return min(key for kind, key in truth.expected if kind == "duplicate_in_flight")


@pytest.mark.parametrize("command", ["analyze", "trace", "audit"])
def test_no_color_means_no_escape_codes_on_a_terminal(
    logs: tuple[Path, SynthTruth], command: str,
) -> None:
    # https://no-color.org: the views passed no_color=False to rich, which then ignored
    # the variable and coloured a terminal whose user had asked for none.
    path, truth = logs
    args = [command, *([_collided(truth)] if command == "trace" else []), str(path), "-q"]
    _, coloured = run_on_terminal(*args, columns=140)
    assert "\x1b[" in coloured  # on a terminal, colour by default
    _, plain = run_on_terminal(*args, columns=140, env={"NO_COLOR": "1"})
    assert "\x1b" not in plain, plain[:400]
    # The same text, laid out for the same terminal: only the colour is gone.
    assert plain == _ANSI.sub("", coloured)
