"""Stopping a follow (SIGINT, SIGTERM) while the logs keep growing."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from ridtrace.forensics.live.follow import Follower, FollowSettings
from tests.forensics.helpers import followed_summary, rt


def _wait(predicate: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"{what} not reached in {timeout}s"
        time.sleep(0.01)


LEAD = 5000  # lines the writer keeps ahead of the follower at most


def test_a_stop_ends_the_follow_while_a_writer_outpaces_it(tmp_path: Path) -> None:
    # A service logging faster than the follower reads (a burst, a retry storm): the
    # stop drained "until nothing is left", which never came while the writer wrote, so
    # Ctrl-C did nothing and a container stop ran into its SIGKILL (no summary).
    log = tmp_path / "frontend.jsonl"
    log.write_bytes(b"")
    block = "".join(rt(None, n=k) + "\n" for k in range(40)).encode()
    written = [0]
    writing = threading.Event()
    writing.set()

    def writer() -> None:
        with open(log, "ab", buffering=0) as fh:
            while writing.is_set():
                if written[0] > follower.stats.lines + LEAD:
                    # Far enough ahead: it writes on as the follower reads on. Unbounded,
                    # a slow (loaded) machine let it get so far ahead while the follower
                    # started that the stop's bounded backlog took more than the 15 s.
                    time.sleep(0.002)
                    continue
                # Two writes per block, cut inside a line: the stop can fall mid-line.
                fh.write(block[:1001])
                fh.write(block[1001:])
                written[0] += 40
                time.sleep(0.002)

    # Small reads make this follower slower than the writer, as a burst does to any.
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, interval=0.01,
                                                        max_bytes=16 << 10))
    follower.start()
    stopping = threading.Event()
    runner = threading.Thread(target=follower.run, args=(lambda f: True,),
                              kwargs={"stop": stopping.is_set})
    writer_thread = threading.Thread(target=writer)
    writer_thread.start()
    try:
        runner.start()
        _wait(lambda: follower.stats.lines > 1000, 30, "the follower reading")
        _wait(lambda: written[0] > follower.stats.lines + 2000, 30, "the writer ahead")
        stopping.set()
        runner.join(timeout=15)
        still_running = runner.is_alive()
    finally:
        writing.clear()
        writer_thread.join()
        runner.join()
    try:
        assert not still_running, "the stopped follow kept reading while the writer wrote"
        summary = follower.summary()
        assert 0 < summary["lines"] < written[0]
        assert summary["bad_lines"] == 0, summary["bad_line_samples"]  # no half line
    finally:
        follower.close()


def test_a_line_the_stop_cuts_is_read_whole_and_nothing_after_it(tmp_path: Path) -> None:
    one, two, three, four = (rt(None, n=k).encode() for k in range(4))
    log = tmp_path / "app.jsonl"
    log.write_bytes(one + b"\n" + two + b"\n" + three[:20])  # the writer is mid-line 3
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True))
    follower.start()
    follower.watch.bound()  # the signal: what is written now is what is read
    with open(log, "ab") as fh:
        fh.write(three[20:] + b"\n" + four + b"\n")
    try:
        follower.run(lambda f: True, stop=lambda: True)
        summary = follower.summary()
    finally:
        follower.close()
    # Line 3 whole (its end was being written), line 4 (written after) not read.
    assert (summary["lines"], summary["bad_lines"]) == (3, 0), summary["bad_line_samples"]


def test_the_rest_of_a_line_the_stop_cut_is_waited_for(tmp_path: Path) -> None:
    # A writer flushing in blocks had half of line 3 out at the stop and the rest a
    # moment later: the follower, reading at once, took the half for a whole (bad) line,
    # and a small log's run was incomplete (exit 3) where the batch read says 0 bad.
    one, two, three, four = (rt(None, n=k).encode() for k in range(4))
    log = tmp_path / "app.jsonl"
    log.write_bytes(one + b"\n" + two + b"\n" + three[:20])
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True))
    follower.start()
    waited: list[float] = []

    def sleep(seconds: float) -> None:
        if not waited:  # the writer's next flush comes while the follow waits
            with open(log, "ab") as fh:
                fh.write(three[20:] + b"\n" + four + b"\n")
        waited.append(seconds)

    try:
        follower.run(lambda f: True, stop=lambda: True, line_wait=sleep)
        summary = follower.summary()
    finally:
        follower.close()
    assert (summary["lines"], summary["bad_lines"]) == (3, 0), summary["bad_line_samples"]
    assert len(waited) == 1


def test_a_line_that_never_ends_is_waited_for_a_second_at_most(tmp_path: Path) -> None:
    log = tmp_path / "app.jsonl"
    log.write_bytes(rt(None, n=1).encode() + b"\n" + b'{"time": "2026')
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True))
    follower.start()
    waited: list[float] = []
    try:
        follower.run(lambda f: True, stop=lambda: True, line_wait=waited.append)
        summary = follower.summary()
    finally:
        follower.close()
    assert waited and sum(waited) < 1.01
    assert (summary["lines"], summary["bad_lines"]) == (2, 1)


def test_a_second_stop_ends_at_once_and_says_what_was_left(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    log.write_bytes("".join(rt(None, n=k) + "\n" for k in range(20000)).encode())
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, max_bytes=16 << 10))
    follower.start()
    polls = [0]

    def stop() -> bool:
        polls[0] += 1
        return polls[0] > 2

    try:
        follower.run(lambda f: True, stop=stop, stop_now=lambda: polls[0] > 3)
        summary = follower.summary()
    finally:
        follower.close()
    assert 0 < summary["lines"] < 20000
    assert summary["incomplete"] is True
    [note] = summary["unreadable_files"]
    assert note["file"] == str(log) and "stopped before its end" in note["reason"], note


def test_a_stop_while_a_line_longer_than_a_read_is_read_reads_every_line_after_it(
    tmp_path: Path,
) -> None:
    # A read that is all one long line hands out no line: it was taken for "nothing
    # left", so a follow stopped mid-way through such a line (a 40 MiB line under load)
    # left every line written after it unread, and the summary counted fewer lines.
    log = tmp_path / "frontend.jsonl"
    long = rt(None, blob="x" * 20_000)
    log.write_text("".join(f"{line}\n" for line in (rt(None, n=1), long, rt(None, n=2),
                                                   rt(None, n=3))))
    summary = followed_summary(tmp_path, max_bytes=4096)
    assert (summary["lines"], summary["bad_lines"]) == (4, 0)
