"""A line stamped years ahead (a clock that jumped) does not end the live window."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ridtrace.cli.follow import summary_text
from ridtrace.forensics.live.follow import Follower, FollowSettings
from tests.forensics.helpers import rt, rt_request, ts

WILD = "2031-06-01T00:00:00.000000Z"


def _ctx(span: str, rid: str) -> dict[str, Any]:
    return {"request_id": rid, "trace_id": f"{span:0>32}", "span_id": span}


class _Writer:
    """Appends lines to one log and polls the follower after each write, as a live
    service and its follower take turns."""

    def __init__(self, tmp_path: Path, window_s: float = 600) -> None:
        self.log = tmp_path / "frontend.jsonl"
        self.log.write_text("")
        self.follower = Follower([str(tmp_path)], FollowSettings(window_s=window_s))
        self.follower.start()
        self.found: list[dict[str, Any]] = []

    def write(self, *lines: str) -> None:
        with open(self.log, "a") as fh:
            fh.write("".join(line + "\n" for line in lines))
        found, _ = self.follower.poll()
        self.found.extend(found)

    def duplicates(self) -> list[str]:
        return [f["request_id"] for f in self.found if f["kind"] == "duplicate_in_flight"]


def test_a_request_in_flight_when_a_wild_line_came_is_still_judged(tmp_path: Path) -> None:
    logs = _Writer(tmp_path)
    try:
        logs.write(rt("request.start", time=ts(0), **_ctx("a", "r1")))
        # Another request's line from a clock years ahead: taken as the present, the
        # window ended there and `a`, in flight, was dropped from it unjudged.
        logs.write(rt("request.start", time=WILD, **_ctx("w", "other")))
        logs.write(rt("request.start", time=ts(1), **_ctx("b", "r1")))
        assert logs.duplicates() == ["r1"]
        summary = logs.follower.summary()
    finally:
        logs.follower.close()
    assert summary["open_at_window_edge"] == 0
    assert summary["ahead_of_present"] == 1
    assert summary["ahead_of_present_samples"] == [
        {"file": str(logs.log), "line": 2, "time": WILD}]
    assert f"stamped ahead: {logs.log}:2 ({WILD})" in summary_text(summary)


def test_a_request_logging_from_a_clock_years_ahead_does_not_stop_detection(
    tmp_path: Path,
) -> None:
    logs = _Writer(tmp_path)
    try:
        logs.write(rt("request.start", time=WILD, **_ctx("w", "other")))
        for k in range(5):
            # The wild request logs on (its latest time stays years ahead), and between
            # its lines two requests hold one id, each read in a poll of its own.
            logs.write(rt("request.start", time=ts(k), **_ctx(f"a{k}", f"r{k}")))
            logs.write(rt("stream.chunk", time=ts(k + 0.1), **_ctx("w", "other")))
            logs.write(rt("request.start", time=ts(k + 0.5), **_ctx(f"b{k}", f"r{k}")))
            # b ends first: an `a` dropped from the window comes back with its end
            # line alone, which would overlap an open b by itself.
            for span in (f"b{k}", f"a{k}"):
                logs.write(rt("request.end", time=ts(k + 0.8), **_ctx(span, f"r{k}"),
                              status=200, outcome="ok"))
        assert logs.duplicates() == [f"r{k}" for k in range(5)]
    finally:
        logs.follower.close()


def test_the_window_moves_on_past_a_wild_line(tmp_path: Path) -> None:
    # Held at the front of the window for good, the wild line kept every later
    # request in it: memory grew with the lines read, not with the window.
    logs = _Writer(tmp_path, window_s=1)
    try:
        logs.write(rt("request.start", time=WILD, **_ctx("w", "other")))
        for k in range(20):
            logs.write(*(rt(event, time=ts(k), **_ctx(f"s{k}", f"r{k}"))
                         for event in ("request.start", "request.end")))
        assert len(logs.follower.rules.state.spans) <= 3
    finally:
        logs.follower.close()


def test_times_at_the_end_of_the_calendar_leave_the_limit_in_range(tmp_path: Path) -> None:
    # The latest time DuckDB reads, plus the day a span may run ahead, is past int64:
    # the limit given to pyarrow then failed the follow (exit 4).
    last = "294247-01-10T04:00:54.775800Z"
    (tmp_path / "frontend.jsonl").write_text("".join(
        rt("request.start", time=last, **_ctx(f"s{k}", "r")) + "\n" for k in range(3)))
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True))
    follower.start()
    try:
        follower.run(lambda f: True, stop=lambda: True)
        assert follower.summary()["lines"] == 3
    finally:
        follower.close()


def test_lines_written_now_after_an_old_backlog_are_the_present(tmp_path: Path) -> None:
    # Read --from-start, days-old lines put the median of the latest times days behind
    # the clock: the first lines written now were taken as stamped ahead of it, so they
    # did not move the window and a duplicate among them waited for its first caller's end.
    log = tmp_path / "frontend.jsonl"
    log.write_text("".join(
        line + "\n" for k in range(300)
        for line in rt_request(f"old{k}", f"old-{k}", k * 0.01, k * 0.01 + 0.005)))
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True))
    follower.start()
    found: list[dict[str, Any]] = []
    try:
        follower.poll()
        for span in ("a", "b"):
            now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            with open(log, "a") as fh:
                fh.write(rt("request.start", time=now, **_ctx(span, "r")) + "\n")
            found.extend(follower.poll()[0])
        assert [f["kind"] for f in found] == ["duplicate_in_flight"]
        assert follower.summary()["ahead_of_present"] == 0
    finally:
        follower.close()
