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
import tempfile
import zlib
from pathlib import Path

import pytest

from tests.forensics.helpers import rt_request
from tests.support.servers import child_pythonpath

# A quarter of a GiB is enough to tell: the interpreter, DuckDB and one 16 MiB line take
# about 300 MiB, and a line of this size held whole (the defect) took 740 MiB to 1.2 GiB
# in each test; a gigabyte proved no more and cost ~10 CPU-s more of page faults and
# (de)compression.
ENDLESS = 256 << 20
PEAK_LIMIT = 512 << 20
LONG_REASON = "line longer than 16 MiB"


# Linux keeps the larger of a process's high-water mark and its parent's at the fork
# across exec, so a child of a pytest worker that has run other tests in process (600
# MiB and more in a full run) reported that as its peak. The command runs under a small
# launcher, whose own child's peak is the command's.
_LAUNCHER = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(child.pid, 0)
with open(sys.argv[1], "w") as peak:
    peak.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _run(*args: str, stdin: Path | None = None) -> tuple[int, bytes, bytes, int]:
    """Exit code, stdout and stderr of `ridtrace ARGS`, and its peak memory (bytes)."""
    env = {**os.environ, "PYTHONPATH": child_pythonpath()}
    with (open(stdin or os.devnull, "rb") as source, tempfile.TemporaryFile() as err,
          tempfile.TemporaryDirectory() as tmp):
        peak = Path(tmp) / "peak"
        done = subprocess.run(
            [sys.executable, "-c", _LAUNCHER, str(peak), sys.executable, "-m", "ridtrace", *args],
            stdin=source, stdout=subprocess.PIPE, stderr=err, env=env, check=False)
        err.seek(0)
        return done.returncode, done.stdout, err.read(), int(peak.read_text()) * 1024  # KiB


def _analyze(path: Path) -> tuple[dict[str, object], int]:
    """The JSON report of `ridtrace analyze path` and the process's peak memory (bytes)."""
    code, out, _, peak = _run("analyze", str(path), "--format", "json")
    assert code == 3, out  # the bad line is over 1 % of the lines
    return json.loads(out), peak


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


def _sparse_log(path: Path, before: list[str], after: list[str]) -> Path:
    # A sparse file: a gigabyte of spaces would cost the disk; zeros cost nothing.
    with open(path, "wb") as fh:
        fh.write(("\n".join(before) + "\n").encode())
        fh.write(b"x")  # the stretch is a line of its own, not a hole before one
        fh.seek(ENDLESS, os.SEEK_CUR)
        fh.write(("\n" + "\n".join(after) + "\n").encode())
    return path


def test_a_preallocated_stretch_of_a_plain_log_is_one_bad_line_in_bounded_memory(
    tmp_path: Path,
) -> None:
    log = _sparse_log(tmp_path / "frontend.jsonl", rt_request("a" * 16, "r1", 0, 1),
                      rt_request("b" * 16, "r2", 2, 3))
    doc, peak = _analyze(log)
    _check(doc, str(log))
    assert peak < PEAK_LIMIT, f"{peak >> 20} MiB"


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_a_follower_holds_no_more_of_an_endless_line_than_the_limit(
    tmp_path: Path, source: str,
) -> None:
    # The duplicate after the line is the follower's cue to stop (--fail-fast): the
    # lines after the long one were read.
    duplicate = rt_request("a" * 16, "dup", 0, 2) + rt_request("b" * 16, "dup", 1, 3)
    log = _sparse_log(tmp_path / "frontend.jsonl", rt_request("c" * 16, "r1", 0, 1), duplicate)
    path, stdin = (str(log), None) if source == "file" else ("-", log)
    code, out, err, peak = _run("analyze", path, "--follow", "--from-start", "--fail-fast",
                                "--format", "json", "--poll-interval", "10ms", stdin=stdin)
    assert code == 1, err
    assert json.loads(out.splitlines()[0])["kind"] == "duplicate_in_flight"
    summary = json.loads(err.splitlines()[-1])
    assert summary["bad_line_samples"][0]["reason"] == LONG_REASON
    assert peak < PEAK_LIMIT, f"{peak >> 20} MiB"
