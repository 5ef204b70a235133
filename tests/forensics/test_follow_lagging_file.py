"""A file read behind the others keeps its spans until it is read past them.

``--from-start`` over a directory holding the hour before (``app.jsonl.1``) and the
live ``app.jsonl`` reads both a chunk a poll (at most `FollowSettings.max_bytes`). The
window was measured from the latest time seen, the live file's, so the hour-old file's
spans were dropped after each of its chunks: a request whose start was in one chunk and
whose duplicate came in the next was no longer held, and the incident was lost.
"""

from __future__ import annotations

from pathlib import Path

from ridtrace.forensics.live.follow import Follower, FollowSettings
from tests.forensics.helpers import rt_request

HOUR_S = 3600.0


def _write(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines) + "\n")


def test_a_duplicate_across_two_chunks_of_an_older_file_is_found(tmp_path: Path) -> None:
    first = rt_request("a1", "dup", 0.0, 30.0)
    second = rt_request("b2", "dup", 20.0, 25.0)  # while the first still runs
    # Other callers between the two starts: the duplicate's lines are chunks apart.
    filler = [line for n in range(60) for line in rt_request(f"f{n}", f"r{n}", 1 + n / 10,
                                                              1 + n / 10 + 0.05)]
    _write(tmp_path / "frontend.jsonl.1", [first[0], *filler, *second, first[1]])
    # The live file, an hour later.
    _write(tmp_path / "frontend.jsonl", rt_request("n1", "now", HOUR_S, HOUR_S + 1))
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, max_bytes=8192))
    follower.start()
    found: list[dict[str, object]] = []
    try:
        follower.run(lambda f: found.append(f) is None, stop=lambda: True)
        summary = follower.summary()
    finally:
        follower.close()
    assert follower.polls > 3  # the older file was read in several chunks
    assert [(f["kind"], f["request_id"]) for f in found] == [("duplicate_in_flight", "dup")]
    assert (summary["requests"], summary["open_at_window_edge"]) == (63, 0)


def test_a_line_its_writer_never_ended_does_not_hold_the_window(tmp_path: Path) -> None:
    # A worker killed mid-line leaves a piece no newline will follow: its file is never
    # "read to its end", but nothing is left to read there, so the window moves on.
    torn = rt_request("w1", "r", 0.0, 0.5)[0]
    (tmp_path / "worker.jsonl").write_text(torn + "\n" + torn[:40])
    _write(tmp_path / "frontend.jsonl",
           [line for n in range(100) for line in rt_request(f"f{n}", f"r{n}", n, n + 0.5)])
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, window_s=5.0))
    follower.start()
    try:
        follower.poll()
        follower.poll()
        held = len(follower.rules.state.spans)
    finally:
        follower.close()
    assert held <= 7  # the last five seconds' callers, not the hundred read
