"""PATH arguments no file can have.

`ridtrace analyze "$LOG_DIR"` with the variable unset passed an empty path, which
pathlib reads as ``.``: the current directory was walked in place of the logs, and a
CI gate got a clean "No findings" (exit 0) on files it never meant, where a missing
path is exit 2.

A name longer than the file system takes (ENAMETOOLONG) was a traceback and exit 4
(ridtrace failed) from the batch read and from ``--follow``.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.support.follower import start_follower

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


def test_a_name_too_long_is_exit_2_naming_the_reason(tmp_path: Path) -> None:
    too_long = str(tmp_path / ("a" * 300 + ".jsonl"))
    done = CliRunner().invoke(main, ["analyze", too_long])
    assert not isinstance(done.exception, OSError), done.exception
    assert done.exit_code == 2, done.output
    assert "File name too long" in done.output


def test_a_followed_name_too_long_makes_the_run_incomplete(tmp_path: Path) -> None:
    # Never a file that may appear later: listed as unreadable, the follow goes on.
    (tmp_path / "frontend.jsonl").write_text("")
    too_long = str(tmp_path / ("a" * 300 + ".jsonl"))
    follower = start_follower([str(tmp_path / "frontend.jsonl"), too_long])
    code = follower.stop(signal.SIGINT)
    assert not any("Traceback" in line for line in follower.stderr), follower.stderr
    assert code == 3
    unreadable = follower.summary()["unreadable_files"]
    assert unreadable == [{"file": too_long, "reason": "cannot read it: File name too long"}]
