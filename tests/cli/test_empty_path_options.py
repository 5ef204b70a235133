"""An empty directory or file option (``--out "$DIR"`` with the variable unset) is bad
usage, as an empty PATH or ``-o`` is: pathlib reads ``""`` as ``.``, so ``ridtrace demo
--out ""`` ran in the working directory and replaced its ``legacy/logs`` and
``safe/logs``, and ``serve --log-file ""`` said it "cannot write ."."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli import demo as demo_module
from ridtrace.cli import serve as serve_module
from ridtrace.cli.main import main


def test_demo_refuses_an_empty_out_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[Path] = []
    # Stands in for the first thing the demo writes, so that without the check the test
    # fails on its assertion rather than running the demo in this folder.
    monkeypatch.setattr(demo_module, "_make_out_folder", made.append)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["demo", "--out", ""])
    assert (result.exit_code, made) == (2, []), result.output
    assert "'--out': an empty path (an unset variable?)" in result.output


@pytest.mark.parametrize("delay", ["nan", "NaN"])
def test_demo_refuses_a_token_delay_that_is_no_number_before_touching_its_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, delay: str
) -> None:
    # nan passed FloatRange: the earlier run's results were deleted, the stack started,
    # and the run stopped with exit 2 naming an internal worker's option.
    made: list[Path] = []
    monkeypatch.setattr(demo_module, "_make_out_folder", made.append)
    result = CliRunner().invoke(main, ["demo", "--out", str(tmp_path / "out"),
                                       "--token-delay", delay])
    assert (result.exit_code, made) == (2, []), result.output
    assert "'--token-delay': not a finite number of seconds" in result.output


@pytest.mark.parametrize("side", [["frontend", "--worker", "http://127.0.0.1:9"], ["worker"]])
def test_serve_refuses_an_empty_log_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, side: list[str]
) -> None:
    started: list[object] = []
    monkeypatch.setattr(serve_module, "setup_telemetry", lambda *args: started.append(args))
    monkeypatch.setattr(serve_module, "run_server", lambda *args, **kwargs: None)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["serve", *side, "--port", "1", "--log-file", ""])
    assert (result.exit_code, started) == (2, []), result.output
    assert "'--log-file': an empty file name (an unset variable?)" in result.output
