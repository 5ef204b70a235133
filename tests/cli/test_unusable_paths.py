"""PATH arguments no file can have.

`ridtrace analyze "$LOG_DIR"` with the variable unset passed an empty path, which
pathlib reads as ``.``: the current directory was walked in place of the logs, and a
CI gate got a clean "No findings" (exit 0) on files it never meant, where a missing
path is exit 2.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main

# (`--follow` refuses it the same way: one PATH argument for every command.)
_COMMANDS = [["analyze"], ["audit"], ["trace", "r1"], ["export", "jaeger", "-o", "out.json"],
             ["analyze", "--engine", "dask"]]


@pytest.mark.parametrize("command", _COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_an_empty_path_is_bad_usage_not_the_current_directory(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "unrelated.jsonl").write_text("")
    done = CliRunner().invoke(main, [*command, ""])
    assert done.exit_code == 2, done.output
    assert "empty path" in done.output
