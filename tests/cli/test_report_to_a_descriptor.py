"""`-o /dev/stdout` (or `/dev/fd/N`, a shell's `>(…)`) writes to the descriptor the
shell handed over, as the shell itself does with those names: a pipe gets the report,
and a file opened for appending (`>> reports.txt`) keeps what it held."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.forensics.helpers import rt_request


def _log(tmp_path: Path) -> Path:
    log = tmp_path / "frontend.jsonl"
    lines = rt_request("a" * 16, "r1", 0, 2) + rt_request("b" * 16, "r1", 1, 3)
    log.write_text("\n".join(lines) + "\n")
    return log


def _ridtrace(*args: str, stdout: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ridtrace", *args], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=120)


def test_a_report_to_dev_stdout_reaches_a_pipe(tmp_path: Path) -> None:
    # Resolved to /proc/PID/fd/pipe:[N], the report went to a temporary file beside a
    # path that does not exist: "cannot write /dev/stdout", exit 2, nothing in the pipe.
    log = _log(tmp_path)
    done = _ridtrace("analyze", str(log), "--format", "json", "-o", "/dev/stdout",
                     stdout=subprocess.PIPE)
    assert done.returncode == 1, done.stderr  # the duplicate in flight
    assert json.loads(done.stdout)["summary"]["duplicate_in_flight"] == 1
    traced = _ridtrace("trace", "r1", str(log), "--format", "json", "-o", "/dev/stdout",
                       stdout=subprocess.PIPE)
    assert traced.returncode == 0, traced.stderr
    assert json.loads(traced.stdout)["requests"]
    exported = _ridtrace("export", "jaeger", str(log), "-o", "/dev/stdout",
                         stdout=subprocess.PIPE)
    assert exported.returncode == 0, exported.stderr
    assert len(json.loads(exported.stdout)["data"]) == 2


def test_a_report_to_dev_stdout_appends_to_a_file_opened_for_appending(
    tmp_path: Path,
) -> None:
    # Resolved to the file itself, the report replaced it whole: what `>>` kept was lost.
    log = _log(tmp_path)
    reports = tmp_path / "reports.txt"
    reports.write_text("yesterday's report\n")
    with open(reports, "a") as appended:
        done = _ridtrace("analyze", str(log), "--format", "json", "-o", "/dev/stdout",
                         stdout=appended)
    assert done.returncode == 1, done.stderr
    previous, report = reports.read_text().split("\n", 1)
    assert previous == "yesterday's report"
    assert json.loads(report)["summary"]["duplicate_in_flight"] == 1
