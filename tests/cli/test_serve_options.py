"""`ridtrace serve` options that shape shutdown (the behaviour: test_graceful_shutdown_e2e)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.graceful import stop_margin
from ridtrace.cli.main import main


def test_stop_margin_leaves_most_of_a_short_grace_period_and_two_seconds_of_a_long_one() -> None:
    assert stop_margin(2) == pytest.approx(0.4)
    assert stop_margin(25) == 2.0


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
def test_the_cli_refuses_a_graceful_timeout_that_is_not_positive(
    tmp_path: Path, value: str
) -> None:
    for argv in (["frontend", "--worker", "http://w"], ["worker"]):
        result = CliRunner().invoke(main, ["serve", *argv, "--port", "1", "--log-file",
                                           f"{tmp_path}/x.jsonl", "--graceful-timeout", value])
        assert result.exit_code == 2 and "--graceful-timeout" in result.output, result.output
