"""A duplicate waiting out the settle time is judged before the window drops it.

Read faster than real time (``--from-start``, or ``kubectl logs -f`` dumping a pod's
history), a worker log whose callers' log is absent names a duplicate only once its
callers' lines could no longer come: a settle time on the machine's clock. The window,
on log time, moved past the pair long before that, dropped both as open at its edge,
and the follow ended with no finding and exit 0 where `analyze` reports the duplicate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ridtrace.forensics.live.findings import Finding
from ridtrace.forensics.live.follow import Follower, FollowSettings
from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.forensics.records.read import read_partials
from ridtrace.forensics.rules.report import analyze_read, report_json
from tests.forensics.helpers import rt, ts

TRAFFIC_S = 40  # of later traffic: four times the window below
DUPLICATE = ("duplicate_in_flight: 2 requests held request_id dup-1 at overlapping times "
             "(spans w1, w2)")


class Ticks:
    """A monotonic clock that never moves: the whole history is read within the settle."""

    def __call__(self) -> float:
        return 100.0


def _worker_span(span: str, rid: str, caller: str, start: float, end: float) -> list[str]:
    ctx = {"request_id": rid, "trace_id": f"{caller:0>32}", "span_id": span,
           "parent_span_id": caller, "service": "worker-1"}
    return [rt("worker.start", time=ts(start), **ctx),
            rt("worker.end", time=ts(end), **ctx, outcome="ok")]


def _worker_log(path: Path) -> None:
    lines = [*_worker_span("w1", "dup-1", "c1", 1.00, 1.20),
             *_worker_span("w2", "dup-1", "c2", 1.05, 1.25)]
    for n in range(TRAFFIC_S * 4):
        start = 2.0 + n / 4
        lines += _worker_span(f"v{n}", f"r{n}", f"d{n}", start, start + 0.05)
    path.write_text("".join(line + "\n" for line in lines))


def _follow(tmp_path: Path, settle_s: float) -> tuple[list[str], dict[str, object]]:
    """Each finding as ``kind: detail``, and the summary."""
    _worker_log(tmp_path / "worker-1.jsonl")
    found, summary = _one_poll(tmp_path, FollowSettings(from_start=True, window_s=10.0,
                                                        settle_s=settle_s))
    return [f"{f['kind']}: {f['detail']}" for f in found], summary


def _one_poll(directory: Path, settings: FollowSettings) -> tuple[list[Finding], dict[str, Any]]:
    """What one poll of `directory`, within the settle time, prints; and the summary."""
    follower = Follower([str(directory)], settings, ticks=Ticks())
    follower.start()
    try:
        found, _ = follower.poll()
        return found, follower.summary()
    finally:
        follower.close()


def test_a_duplicate_waiting_out_the_settle_time_is_reported_as_it_leaves_the_window(
    tmp_path: Path,
) -> None:
    found, summary = _follow(tmp_path, settle_s=1.0)
    # Named by the worker spans that stand for the absent callers, as `analyze` names them.
    assert found == [DUPLICATE]
    assert summary["open_at_window_edge"] == 0


def test_without_a_settle_time_the_same_duplicate_is_reported(tmp_path: Path) -> None:
    found, summary = _follow(tmp_path, settle_s=0.0)
    assert found == [DUPLICATE]
    assert summary["open_at_window_edge"] == 0


# A worker whose clock runs two hours ahead moves the window's present past everything
# the others logged; a quiet worker log (its last line long before) held every verdict
# as "a file not read past it" meanwhile. Both verdicts were dropped unsaid (exit 0),
# where `analyze` reports them.
AHEAD_S = 7200.0


def _front(span: str, rid: str, start: float, end: float, **end_fields: object) -> list[str]:
    ctx = {"request_id": rid, "trace_id": f"{span:0>32}", "span_id": span,
           "parent_span_id": f"c{span}"}  # continuing a client's traceparent
    return [rt("request.start", time=ts(start), **ctx),
            rt("request.end", time=ts(end), status=200, outcome="ok", **ctx, **end_fields)]


def _work(span: str, caller: str, rid: str, start: float, end: float,
          **end_fields: object) -> list[str]:
    ctx = {"request_id": rid, "trace_id": f"{caller:0>32}", "span_id": span,
           "parent_span_id": caller, "service": "worker"}
    return [rt("worker.start", time=ts(start), **ctx),
            rt("worker.end", time=ts(end), outcome="ok", **ctx, **end_fields)]


def _skewed_logs(directory: Path) -> None:
    logs = {
        # r0 first; then a1 and a2 hold "dup" at once; then b1 and b2 swap streams.
        "frontend.jsonl": [*_front("a0", "r0", 7.0, 8.3), *_front("a1", "dup", 52.0, 53.2),
                           *_front("a2", "dup", 52.3, 52.9),
                           *_front("b1", "s1", 60.0, 61.0, fp_in="f1", fp_out="o2"),
                           *_front("b2", "s2", 60.1, 61.1, fp_in="f2", fp_out="o1")],
        "worker-quiet.jsonl": _work("w0", "a0", "r0", 7.1, 8.2),
        "worker.jsonl": [*_work("w1", "a1", "dup", 52.01, 53.1),
                         *_work("v1", "b1", "s1", 60.01, 60.5, fp_in="f1", fp_out="o1"),
                         *_work("v2", "b2", "s2", 60.11, 60.6, fp_in="f2", fp_out="o2")],
        "worker-ahead.jsonl": _work("w2", "a2", "dup", AHEAD_S + 52.31, AHEAD_S + 52.8),
    }
    for name, lines in logs.items():
        (directory / name).write_text("".join(line + "\n" for line in lines))


def test_a_worker_clock_ahead_by_more_than_the_window_hides_no_verdict(tmp_path: Path) -> None:
    _skewed_logs(tmp_path)
    batch = analyze_read(read_partials(expand_inputs([str(tmp_path)])))
    expected = sorted((f["kind"], f["span_id"], f["detail"])
                      for f in report_json(batch)["findings"])
    assert [kind for kind, _, _ in expected] == [
        "crossed_stream", "crossed_stream", "duplicate_in_flight"]
    found, summary = _one_poll(tmp_path, FollowSettings(from_start=True))
    assert sorted((f["kind"], f["span_id"], f["detail"]) for f in found) == expected
    assert summary["open_at_window_edge"] == 0
