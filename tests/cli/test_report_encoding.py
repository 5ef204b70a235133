"""Reports on a standard output whose encoding is not UTF-8.

A Windows runner's redirected stdout is cp1252, an older server's locale Latin-1: the
table's box drawing and a client's id in CJK could not be encoded there, and the report
was a UnicodeEncodeError traceback with exit 4 (ridtrace failed) instead of the report
and its exit code. Written to `-o FILE` the same report was UTF-8: standard output
(`-o -`) carries the same bytes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.forensics.helpers import rt_request


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("logs")
    # Two callers held a client's id in CJK at once: a finding (exit 1) that names it.
    lines = [*rt_request("a" * 16, "请求-7", 0, 2), *rt_request("b" * 16, "请求-7", 1, 3)]
    (out / "frontend.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def _ridtrace(*args: str, encoding: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONIOENCODING": encoding, "COLUMNS": "160"}
    return subprocess.run([sys.executable, "-m", "ridtrace", *args, "-q"],
                          capture_output=True, env=env, timeout=120, check=False)


@pytest.mark.parametrize("command", [
    ["analyze"], ["analyze", "--format", "json"], ["analyze", "--format", "csv"],
    ["trace", "请求-7"], ["audit"], ["export", "jaeger"],
])
def test_stdout_gets_the_report_file_in_utf8(
    logs: Path, tmp_path: Path, command: list[str],
) -> None:
    encoding = "cp1252"  # a Windows runner's redirected stdout; Latin-1 fails alike
    extra = ["-o", "-"] if command == ["export", "jaeger"] else []
    to_stdout = _ridtrace(*command, str(logs), *extra, encoding=encoding)
    assert b"Traceback" not in to_stdout.stderr, to_stdout.stderr.decode(errors="replace")
    report = tmp_path / "report.out"
    to_file = _ridtrace(*command, str(logs), "-o", str(report), encoding=encoding)
    assert to_stdout.returncode == to_file.returncode
    assert to_stdout.returncode in (0, 1), to_stdout.stderr
    assert to_stdout.stdout == report.read_bytes()
    to_stdout.stdout.decode("utf-8")  # the encoding JSON (RFC 8259 §8.1) and CSV expect
