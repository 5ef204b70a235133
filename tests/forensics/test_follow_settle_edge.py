"""A duplicate waiting out the settle time is judged before the window drops it.

Read faster than real time (``--from-start``, or ``kubectl logs -f`` dumping a pod's
history), a worker log whose callers' log is absent names a duplicate only once its
callers' lines could no longer come: a settle time on the machine's clock. The window,
on log time, moved past the pair long before that, dropped both as open at its edge,
and the follow ended with no finding and exit 0 where `analyze` reports the duplicate.
"""

from __future__ import annotations

from pathlib import Path

from ridtrace.forensics.live.follow import Follower, FollowSettings
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
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, window_s=10.0,
                                                        settle_s=settle_s), ticks=Ticks())
    follower.start()
    try:
        found, _ = follower.poll()
        summary = follower.summary()
    finally:
        follower.close()
    return [f"{f['kind']}: {f['detail']}" for f in found], summary


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
