"""A report or plot name no file can have is refused before the logs are read.

`-o "$REPORT"` with the variable unset ran the whole read (minutes on an incident's
logs) and then said `cannot write .: Is a directory`, naming a directory the user never
typed; a report in a directory that does not exist failed the same way, after the read.
Both are usage errors now, found before anything is read: the tests give `-` as the
input and never close it, so a read would wait for ever.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _run_on_open_stdin(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    read_end, write_end = os.pipe()
    try:
        return subprocess.run([sys.executable, "-m", "ridtrace", *args], stdin=read_end,
                              capture_output=True, text=True, timeout=60, cwd=cwd)
    finally:
        os.close(read_end)
        os.close(write_end)


@pytest.mark.parametrize("args", [
    ["analyze", "-", "-o", ""], ["trace", "r1", "-", "-o", ""],
    ["export", "jaeger", "-", "-o", ""], ["audit", "-", "--plot", ""],
], ids=["analyze", "trace", "export", "audit-plot"])
def test_an_empty_output_name_is_a_usage_error(tmp_path: Path, args: list[str]) -> None:
    done = _run_on_open_stdin(args, tmp_path)
    assert done.returncode == 2, done.stderr
    assert "empty file name" in done.stderr
    assert "cannot write ." not in done.stderr


def test_a_report_in_a_missing_directory_is_a_usage_error(tmp_path: Path) -> None:
    done = _run_on_open_stdin(["audit", "-", "-o", "reports/today.txt"], tmp_path)
    assert done.returncode == 2, done.stderr
    assert "cannot write reports/today.txt: no directory reports" in done.stderr
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize(("made", "said"), [
    ("file", "cannot write notes/today.txt: notes is not a directory"),
    ("link", "no directory"),
    ("loop", "cannot write today.txt: Too many levels of symbolic links"),
], ids=["a-file-in-its-place", "a-link-into-a-missing-directory", "a-link-to-itself"])
def test_a_report_whose_directory_cannot_be_is_a_usage_error(
    tmp_path: Path, made: str, said: str,
) -> None:
    # Both were refused only after the read (`cannot write …: Not a directory`, `No such
    # file or directory`): a file where the directory would be, and a link whose target
    # is in a directory that does not exist (the report replaces what a link points to).
    if made == "file":
        (tmp_path / "notes").write_text("not a directory\n")
        target = "notes/today.txt"
    elif made == "link":
        (tmp_path / "today.txt").symlink_to(tmp_path / "nowhere" / "today.txt")
        target = "today.txt"
    else:
        (tmp_path / "today.txt").symlink_to("today.txt")
        target = "today.txt"
    for args in (["analyze", "-", "-o", target], ["audit", "-", "--plot", target]):
        done = _run_on_open_stdin(args, tmp_path)
        assert done.returncode == 2, done.stderr
        assert "Invalid value for" in done.stderr and said in done.stderr, done.stderr
    assert not (tmp_path / "nowhere").exists()
