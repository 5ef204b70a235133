"""A file read to its end may still lag the others: judgements wait a settle time.

Each service flushes its own log: a frontend may hold a request's end line in its
buffer while a worker has already written the next caller's lines. The follower read the
frontend to its end, took it as caught up to the worker's later time, and printed the
caller whose end had not been flushed as a duplicate of the next caller of its id (the
intermittent false finding of ``test_line_written_in_two_pieces_is_read_once_whole``).
"""

from __future__ import annotations

from pathlib import Path

from ridtrace.forensics.live.findings import Finding
from ridtrace.forensics.live.follow import Follower, FollowSettings
from tests.forensics.helpers import rt, ts

FRONT_TRACE, NEXT_TRACE = "a" * 32, "b" * 32


class Ticks:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _append(path: Path, *lines: str) -> None:
    with path.open("a") as handle:
        handle.writelines(line + "\n" for line in lines)


def _caller(event: str, span: str, trace: str, seconds: float) -> str:
    return rt(event, time=ts(seconds), request_id="360", trace_id=trace, span_id=span,
              status=200, outcome="ok")


def _next_callers_worker(event: str, seconds: float) -> str:
    return rt(event, time=ts(seconds), request_id="360", trace_id=NEXT_TRACE, span_id="w2",
              parent_span_id="b2", service="worker", outcome="ok")


def _start(tmp_path: Path, settle_s: float, ticks: Ticks) -> tuple[Follower, Path, Path]:
    """The frontend read up to caller a1's start (its end still in the frontend's
    buffer), the worker already showing the id's next caller at work."""
    front, worker = tmp_path / "frontend.jsonl", tmp_path / "worker.jsonl"
    _append(front, _caller("request.start", "a1", FRONT_TRACE, 0.90))
    _append(worker, _next_callers_worker("worker.start", 1.32))
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, settle_s=settle_s),
                        ticks=ticks)
    follower.start()
    return follower, front, worker


def test_a_caller_whose_end_is_not_flushed_yet_is_no_duplicate(tmp_path: Path) -> None:
    ticks = Ticks()
    follower, front, worker = _start(tmp_path, 1.0, ticks)
    try:
        found, _ = follower.poll()
        ticks.now += 0.5  # within the settle time the frontend flushes
        _append(front, _caller("request.end", "a1", FRONT_TRACE, 1.30),
                _caller("request.start", "b2", NEXT_TRACE, 1.31),
                _caller("request.end", "b2", NEXT_TRACE, 1.80))
        _append(worker, _next_callers_worker("worker.end", 1.70))
        more, _ = follower.poll()
        ticks.now += 5.0
        later, _ = follower.poll()
        found += more + later + follower.finish()
    finally:
        follower.close()
    assert found == []


def test_a_silent_file_is_taken_as_caught_up_once_the_settle_time_passed(
    tmp_path: Path,
) -> None:
    # The same start, but the frontend never writes a1's end: a1 was in flight when
    # the next caller's worker took the id, a duplicate once the frontend stayed silent.
    ticks = Ticks()
    follower, _, _ = _start(tmp_path, 1.0, ticks)
    try:
        early, _ = follower.poll()
        ticks.now += 0.9
        still_early, _ = follower.poll()
        ticks.now += 0.2
        settled, _ = follower.poll()
    finally:
        follower.close()
    assert early == still_early == []
    assert [(f["kind"], f["request_id"], f["span_id"]) for f in settled] == [
        ("duplicate_in_flight", "360", "a1")
    ]


def test_with_no_settle_time_a_file_read_to_its_end_is_caught_up_at_once(
    tmp_path: Path,
) -> None:
    follower, _, _ = _start(tmp_path, 0.0, Ticks())
    try:
        found, _ = follower.poll()
    finally:
        follower.close()
    assert [(f["kind"], f["span_id"]) for f in found] == [("duplicate_in_flight", "a1")]


def _torn(tmp_path: Path, *, rotate: bool) -> tuple[list[Finding], list[Finding]]:
    """The silent frontend of `_start`, its last line torn; renamed away (a rotation)
    after its first piece when `rotate`. What the polls before and after a settle time
    since the piece last grew printed."""
    ticks = Ticks()
    follower, front, _ = _start(tmp_path, 1.0, ticks)
    try:
        with front.open("a") as handle:
            handle.write('{"time": "2026-')
        early = follower.poll()[0]
        if rotate:
            front.rename(front.with_name("frontend.jsonl.1"))
            front.touch()  # the writer's new file
        ticks.now += 0.6
        with (front.with_name("frontend.jsonl.1") if rotate else front).open("a") as handle:
            handle.write("11-29T")  # still being written: its time is yet to come
        early += follower.poll()[0]
        ticks.now += 0.6
        early += follower.poll()[0]  # 0.6 s since the piece last grew
        ticks.now += 0.5
        settled = follower.poll()[0]
    finally:
        follower.close()
    return early, settled


def test_a_rotated_part_ending_in_a_torn_line_is_caught_up_once_the_piece_sat_a_settle_time(
    tmp_path: Path,
) -> None:
    # A rotated log's last line torn (its writer killed mid-write, or writing to the new
    # file now) never gets its newline: taken as more to come, at a time not known, it
    # held every judgement on the files' progress for good (crossed streams never printed).
    early, settled = _torn(tmp_path, rotate=True)
    assert early == []
    assert [(f["kind"], f["request_id"], f["span_id"]) for f in settled] == [
        ("duplicate_in_flight", "360", "a1")
    ]


def test_a_live_files_torn_line_is_waited_for(tmp_path: Path) -> None:
    # A writer that flushes by blocks leaves a piece of a line for as long as it writes
    # no more: the rest of the line, when it comes, may end a1 in time.
    early, settled = _torn(tmp_path, rotate=False)
    assert early == settled == []


def _left_the_window(tmp_path: Path) -> tuple[list[Finding], int]:
    """The logs written so far followed beside a rotated part whose torn last piece
    (within a long settle time) keeps every file from being caught up; then a line 30 s
    later moves the 1 s window past them all. What was printed, and `open_at_edge`."""
    rotated = tmp_path / "frontend.jsonl.1"
    _append(rotated, *(rt(event, time=ts(seconds), span_id="f0", request_id="r0",
                          trace_id="d" * 32, status=200, outcome="ok")
                       for event, seconds in (("request.start", 0.5), ("request.end", 0.6))))
    with rotated.open("a") as handle:
        handle.write('{"time": "2026-')
    ticks = Ticks()
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, settle_s=1000.0,
                                                        window_s=1.0), ticks=ticks)
    follower.start()
    try:
        found, _ = follower.poll()
        _append(tmp_path / "worker.jsonl", rt("worker.start", time=ts(30.0), request_id="r9",
                                              trace_id="c" * 32, span_id="w9",
                                              service="worker"))
        ticks.now += 1.0
        found += follower.poll()[0]
        return found, follower.rules.state.open_at_edge
    finally:
        follower.close()


def test_a_caller_whose_verdict_waits_on_a_lagging_file_is_counted_when_it_leaves(
    tmp_path: Path,
) -> None:
    # A finished caller given output a worker made for another: its crossed-stream
    # verdict waits until every file is read past its end. When the caller left the
    # window, it was dropped without a word: now counted as `open_at_window_edge`.
    mine = {"request_id": "r1", "trace_id": FRONT_TRACE}
    _append(tmp_path / "frontend.jsonl", rt("request.start", time=ts(1.0), span_id="f1", **mine),
            rt("request.end", time=ts(2.0), span_id="f1", status=200, outcome="ok",
               fp_in="in-1", fp_out="out-2", **mine))
    _append(tmp_path / "worker.jsonl", *(
        rt(event, time=ts(seconds), request_id="r2", trace_id=NEXT_TRACE, span_id="w2",
           parent_span_id="f2", service="worker", fp_in="in-2", fp_out="out-2", outcome="ok")
        for event, seconds in (("worker.start", 1.1), ("worker.end", 1.9))))
    found, edge = _left_the_window(tmp_path)
    assert found == []
    assert edge == 1  # f1; every other span had ended


def test_holders_of_an_id_whose_verdict_waits_on_a_lagging_file_are_counted_when_they_leave(
    tmp_path: Path,
) -> None:
    # A worker span holds a caller's id at overlapping times; its own caller may still
    # come in a file read behind, so the duplicate's verdict waits. When its holders
    # left the window, they were dropped without a word: now counted.
    _append(tmp_path / "frontend.jsonl", *(
        rt(event, time=ts(seconds), span_id="f1", request_id="dup", trace_id=FRONT_TRACE,
           status=200, outcome="ok")
        for event, seconds in (("request.start", 1.0), ("request.end", 3.0))))
    _append(tmp_path / "worker.jsonl", *(
        rt(event, time=ts(seconds), request_id="dup", trace_id=NEXT_TRACE, span_id="w2",
           parent_span_id="f2", service="worker", outcome="ok")
        for event, seconds in (("worker.start", 2.0), ("worker.end", 2.5))))
    found, edge = _left_the_window(tmp_path)
    assert found == []
    assert edge == 2  # f1 and w2; f0 had ended, and no verdict waited on it
