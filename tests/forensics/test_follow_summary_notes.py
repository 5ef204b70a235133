"""The table a stopped ``--follow`` prints says where its bad lines are and which files
it passed over, as the batch read's stderr does: a count alone left no way to them."""

from __future__ import annotations

from pathlib import Path

from ridtrace.cli.follow import summary_text
from ridtrace.forensics.live.follow import Follower, FollowSettings
from tests.forensics.helpers import rt, ts


def test_the_summary_table_names_bad_lines_and_ignored_files(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    log.write_text("")
    (tmp_path / "README.txt").write_text("notes on these logs, not a log\n" * 3)
    follower = Follower([str(tmp_path)], FollowSettings())
    try:
        follower.start()
        ctx = {"request_id": "r1", "trace_id": "a" * 32, "span_id": "b" * 16}
        with open(log, "a") as fh:
            fh.write(rt("request.start", time=ts(0), **ctx) + "\n")
            fh.write('{"time": "2026-01-01T00:00:00Z", "event": "request.e\n')
            fh.write("plain text from a crash\n")
        follower.poll()
        summary = follower.summary()
    finally:
        follower.close()
    table = summary_text(summary)
    assert summary["bad_lines"] == 2
    assert f"bad line: {log}:2 (" in table and f"bad line: {log}:3 (" in table
    assert f"ignored: {tmp_path / 'README.txt'}: " in table
