"""Copy-and-truncate under a writer that does not append: the hole of NULs it leaves.

logrotate's ``copytruncate`` empties the file, but a writer that opened it without
O_APPEND (``>`` rather than ``>>``, ``open(path, "w")``) writes its next line at its old
offset: the file then starts with that many NUL bytes (a sparse hole) and the line.
"""

from __future__ import annotations

import gzip
import os
import shutil
import threading
import time
from pathlib import Path

from ridtrace.forensics import analyze, load_events
from ridtrace.forensics.live.follow import Follower, FollowSettings
from tests.forensics.helpers import rt, rt_request, ts


def _requests(first: int, count: int) -> list[str]:
    lines: list[str] = []
    for k in range(first, first + count):
        lines += rt_request(f"s{k}", f"r{k}", k * 0.01, k * 0.01 + 0.005)
    return lines


def _unlinked(k: int) -> str:
    return rt("response.unlinked", time=ts(k * 0.01), request_id=f"r{k}", span_id=f"u{k}",
              trace_id=f"{k:0>32}")


def test_lines_after_a_copytruncate_hole_are_read_once_whole(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    writer = open(log, "w")  # noqa: SIM115 (the service's handle, no O_APPEND)
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, interval=0.01))
    follower.start()
    found: list[dict[str, object]] = []
    stopping = threading.Event()
    runner = threading.Thread(target=follower.run, args=(lambda f: found.append(f) is None,),
                              kwargs={"stop": stopping.is_set})
    runner.start()
    written = 0
    try:
        for rotation in range(2):
            # More than the 4 KiB a content is recognised by: the hole is bigger too.
            batch = _requests(rotation * 1000, 300)
            writer.write("".join(line + "\n" for line in batch))
            writer.flush()
            written += len(batch)
            # The rotation's first line after the hole is an Unlinked error.
            shutil.copyfile(log, log.with_name(f"frontend.jsonl.{rotation + 1}"))
            os.truncate(log, 0)
            writer.write(_unlinked(rotation * 1000 + 500) + "\n")
            writer.flush()
            written += 1
            # Rotations hours apart: the line is read from the log, not from the next copy.
            deadline = time.monotonic() + 30
            while follower.stats.lines < written or len(found) < rotation + 1:
                assert time.monotonic() < deadline, (follower.stats.lines, written, found)
                time.sleep(0.02)
    finally:
        stopping.set()
        runner.join(timeout=30)
        writer.close()
    summary = follower.summary()
    follower.close()
    assert summary["bad_lines"] == 0, summary["bad_line_samples"]
    assert summary["lines"] == written  # nothing read twice from the copies
    assert [(f["kind"], f["evidence"]) for f in found] == [
        ("unlinked", [{"file": str(log), "line": 1}]),
        ("unlinked", [{"file": str(log), "line": 1}]),
    ]


def test_analyze_reads_the_line_after_a_hole(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    log.write_bytes(b"\0" * 5000 + _unlinked(7).encode() + b"\n")
    report = analyze(load_events([str(log)]))
    assert report.summary["bad_lines"] == 0
    assert report.summary["unlinked"] == 1


def test_a_compressed_copy_of_a_log_with_a_hole_is_known_as_that_log(tmp_path: Path) -> None:
    """logrotate's ``copytruncate`` with ``compress``: each copy is gzipped at once, and
    from the second rotation on the copy starts with the hole the first one left. Its
    first lines were taken with the NULs, so it was no copy of the log read: every line
    in it was read again (62 lines for 50), or, the hole longer than the 64 KiB a head
    is looked for in, it had no head at all, and the lines it held that the follower
    had not read yet from the log were never placed."""
    log = tmp_path / "frontend.jsonl"
    writer = open(log, "w")  # noqa: SIM115 (the service's handle, no O_APPEND)
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, settle_s=0))
    follower.start()
    written = 0
    try:
        for rotation in range(3):
            # Lines the follower reads, then lines it has not read when the copy is made.
            for count, poll in ((400, True), (20, False)):
                batch = _requests(rotation * 1000 + (count == 20) * 500, count)
                writer.write("".join(line + "\n" for line in batch))
                writer.flush()
                written += len(batch)
                if poll:
                    follower.poll()
            for k in range(rotation, 0, -1):
                part = log.with_name(f"frontend.jsonl.{k}.gz")
                part.rename(log.with_name(f"frontend.jsonl.{k + 1}.gz"))
            copy = log.with_name("frontend.jsonl.1")
            shutil.copyfile(log, copy)
            os.truncate(log, 0)
            with copy.open("rb") as plain, gzip.open(f"{copy}.gz", "wb") as packed:
                shutil.copyfileobj(plain, packed)
            copy.unlink()
            for _ in range(3):
                follower.poll()
            assert (follower.stats.lines, follower.stats.bad_lines) == (written, 0)
    finally:
        writer.close()
        follower.close()
