"""Files that come and go between two polls of a followed directory (a job's scratch
files, a log rotated away at once) are nothing the follow could not read.

A file the walk listed but removed before the follower opened it was listed as
unreadable ("cannot read it: No such file or directory"), and a directory removed
after its parent's listing as "cannot list it": the run said incidents may be missing
and exited 3, for files that held nothing any more.
"""

from __future__ import annotations

import gzip
import signal
import threading
from pathlib import Path

from tests.support.follower import start_follower

# A log record: a line of no request is a bad line, and bad lines are what is checked.
LINE = (Path(__file__).parents[1] / "forensics" / "data" / "dynamo-jsonl-sample.jsonl"
        ).read_bytes().splitlines(keepends=True)[0]
ROUNDS = 150
"""Polls the follower is seen to make while the files churn: without the fix, the
removals fell between the walk and the open in one poll of about seventy (measured
in-process, 299 of 20458), so a run of this many polls hit it."""


def _churn(logs: Path, stop: threading.Event) -> None:
    """Create and remove, as fast as it goes: an empty log, a written one, a gzip, a
    directory holding a log."""
    turn = 0
    while not stop.is_set():
        turn += 1
        empty, written = logs / f"empty-{turn}.jsonl", logs / f"written-{turn}.jsonl"
        empty.write_bytes(b"")
        empty.unlink()
        written.write_bytes(LINE * 3)
        written.unlink()
        with gzip.open(logs / f"rotated-{turn}.jsonl.gz", "wb") as compressed:
            compressed.write(LINE)
        (logs / f"rotated-{turn}.jsonl.gz").unlink()
        scratch = logs / f"job-{turn}"
        scratch.mkdir()
        (scratch / "app.jsonl").write_bytes(LINE)
        (scratch / "app.jsonl").unlink()
        scratch.rmdir()


def test_files_removed_between_polls_are_no_unreadable_files(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    follower = start_follower([str(logs)], "--poll-interval", "1ms")
    stop = threading.Event()
    churner = threading.Thread(target=_churn, args=(logs, stop), daemon=True)
    churner.start()
    try:
        for turn in range(ROUNDS):
            # Opened by the follower, then removed: one more poll seen for certain.
            marker = logs / f"poll-{turn}.jsonl"
            marker.write_bytes(LINE)
            follower.wait_for(lambda: follower.holds_open(marker), timeout=30,  # noqa: B023
                              what=f"poll {turn}")
            marker.unlink()
    finally:
        stop.set()
        churner.join(timeout=30)
        code = follower.stop(signal.SIGINT)
    assert not any("Traceback" in line for line in follower.stderr), follower.stderr
    summary = follower.summary()
    assert summary["unreadable_files"] == [] and summary["ignored_files"] == []
    assert summary["bad_lines"] == 0 and summary["incomplete"] is False and code == 0
