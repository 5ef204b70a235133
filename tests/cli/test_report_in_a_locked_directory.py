"""`-o FILE` writes a report its user may write, as the shell's `>` does, also where the
directory would not take a new file or a rename.

The report is staged in a temporary file that replaces FILE once complete. A rename
needs the directory's permission, which `>` does not: a report file an operator may
write in a directory owned by someone else (a shared reports folder, a file a CI job
pre-created) was refused, `cannot write FILE: Permission denied`, exit 2.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.forensics.helpers import rt_request
from tests.support.unprivileged import unprivileged_prefix

_AS_USER = unprivileged_prefix("a write")
# Root keeps CAP_FOWNER otherwise, which lets it rename over another user's file in a
# sticky directory (/tmp) where an operator cannot.
_AS_USER_NOT_OWNER = [arg.replace("dac_read_search", "dac_read_search,-fowner")
                      for arg in _AS_USER]


def _log(directory: Path) -> Path:
    log = directory / "frontend.jsonl"
    log.write_text("\n".join(rt_request("a" * 16, "r1", 0, 2)) + "\n")
    return log


def _analyze_to(prefix: list[str], log: Path, report: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "ridtrace", "analyze", str(log), "--format", "json",
         "-o", str(report), "-q"], capture_output=True, text=True, timeout=120)


def test_a_writable_report_in_a_read_only_directory_is_written(tmp_path: Path) -> None:
    log = _log(tmp_path)
    shared = tmp_path / "reports"
    shared.mkdir()
    report = shared / "report.json"
    report.write_text("yesterday's report\n")
    report.chmod(0o666)
    shared.chmod(0o555)
    done = _analyze_to(_AS_USER, log, report)
    assert done.returncode == 0, done.stderr
    assert report.read_text().startswith("{")
    assert os.listdir(shared) == ["report.json"]
    assert report.stat().st_mode & 0o777 == 0o666


def test_another_users_writable_report_in_a_sticky_directory_is_written(
    tmp_path: Path,
) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give the report to another user")
    log = _log(tmp_path)
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    os.chown(shared, 65533, 65533)  # neither the directory nor the report is the user's
    report = shared / "report.json"
    report.write_text("someone else's report\n")
    report.chmod(0o666)
    os.chown(report, 65534, 65534)
    done = _analyze_to(_AS_USER_NOT_OWNER, log, report)
    assert done.returncode == 0, done.stderr
    assert report.read_text().startswith("{")
    assert report.stat().st_uid == 65534
    assert os.listdir(shared) == ["report.json"]


@pytest.mark.parametrize("where", ["read-only report", "read-only directory"])
def test_a_report_that_cannot_be_written_is_refused_before_the_read(
    tmp_path: Path, where: str
) -> None:
    # It was refused after the whole read: 8 s of a 515 MB log, minutes of an
    # incident's, for no report. The shell's `>` refuses before the command runs.
    log = _log(tmp_path)
    shared = tmp_path / "reports"
    shared.mkdir()
    report = shared / "report.json"
    if where == "read-only report":
        report.write_text("yesterday's report\n")
        report.chmod(0o444)
    else:
        shared.chmod(0o555)
    done = _analyze_to(_AS_USER, log, report)
    assert done.returncode == 2
    assert "Invalid value for '-o' / '--output'" in done.stderr  # the option's own check
    assert "Permission denied" in done.stderr
    if where == "read-only report":
        assert report.read_text() == "yesterday's report\n"
    else:
        assert os.listdir(shared) == []


def test_standard_output_named_as_the_report_is_written_by_an_operator(tmp_path: Path) -> None:
    # /dev/stdout on a pipe leads to `/proc/PID/fd/pipe:[N]`, no file, in a directory
    # only root may write: the check before the read took it for a new file there.
    log = _log(tmp_path)
    done = _analyze_to(_AS_USER, log, Path("/dev/stdout"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("{")


def test_a_write_only_report_is_written_as_the_shell_writes_it(tmp_path: Path) -> None:
    # click's Path checked an existing report was readable: a write-only one (0200) was
    # refused, "is not readable", where `>` writes it.
    log = _log(tmp_path)
    report = tmp_path / "report.json"
    report.write_text("")
    report.chmod(0o200)
    done = _analyze_to(_AS_USER, log, report)
    assert done.returncode == 0, done.stderr
    report.chmod(0o600)
    assert report.read_text().startswith("{")
