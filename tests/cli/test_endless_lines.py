"""A line with no end in sight costs the 16 MiB limit, not its size, in memory.

A 4 MiB gzip of zeros (a "gzip bomb"), a log preallocated with zeros and never written,
``/dev/zero`` or a runaway writer give one line of gigabytes. Such a line is a bad line
whatever it holds (`reading.overlong`), but it was held whole on its way there: 1 GiB
of it took over 2 GiB of memory, so a few more took the machine's. Each test runs
`ridtrace analyze` in its own process and reads that process's peak memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

from tests.forensics.helpers import rt_request
from tests.support.servers import child_pythonpath

ENDLESS = 1 << 30
PEAK_LIMIT = 768 << 20  # the interpreter, DuckDB and one 16 MiB line take about 280 MiB
LONG_REASON = "line longer than 16 MiB"


def _analyze(path: Path) -> tuple[dict[str, object], int]:
    """The JSON report of `ridtrace analyze path` and the process's peak memory (bytes)."""
    env = {**os.environ, "PYTHONPATH": child_pythonpath()}
    process = subprocess.Popen(
        [sys.executable, "-m", "ridtrace", "analyze", str(path), "--format", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
    )
    assert process.stdout is not None
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    assert process.returncode == 3, out  # the bad line is over 1 % of the lines
    return json.loads(out), usage.ru_maxrss * 1024  # kilobytes on Linux


def _check(doc: dict[str, object], name: str) -> None:
    summary = doc["summary"]
    assert isinstance(summary, dict)
    assert summary["bad_line_samples"] == [{"file": name, "line": 3, "reason": LONG_REASON}]
    assert summary["requests"] == 2 and summary["lines"] == 5


def test_a_gzip_bomb_is_one_bad_line_in_bounded_memory(tmp_path: Path) -> None:
    before, after = rt_request("a" * 16, "r1", 0, 1), rt_request("b" * 16, "r2", 2, 3)
    pack = zlib.compressobj(1, wbits=31)
    parts = [pack.compress(("\n".join(before) + "\n").encode())]
    piece = b"x" * (16 << 20)
    parts += [pack.compress(piece) for _ in range(ENDLESS // len(piece))]
    parts += [pack.compress(("\n" + "\n".join(after) + "\n").encode()), pack.flush()]
    bomb = tmp_path / "frontend.jsonl.gz"
    bomb.write_bytes(b"".join(parts))
    assert bomb.stat().st_size < 8 << 20
    doc, peak = _analyze(bomb)
    _check(doc, str(bomb))
    assert peak < PEAK_LIMIT, f"{peak >> 20} MiB"


def test_a_preallocated_stretch_of_a_plain_log_is_one_bad_line_in_bounded_memory(
    tmp_path: Path,
) -> None:
    # A sparse file: a gigabyte of spaces would cost the disk; zeros cost nothing.
    log = tmp_path / "frontend.jsonl"
    with open(log, "wb") as fh:
        fh.write(("\n".join(rt_request("a" * 16, "r1", 0, 1)) + "\n").encode())
        fh.write(b"x")  # the stretch is a line of its own, not a hole before one
        fh.seek(ENDLESS, os.SEEK_CUR)
        fh.write(("\n" + "\n".join(rt_request("b" * 16, "r2", 2, 3)) + "\n").encode())
    doc, peak = _analyze(log)
    _check(doc, str(log))
    assert peak < PEAK_LIMIT, f"{peak >> 20} MiB"
