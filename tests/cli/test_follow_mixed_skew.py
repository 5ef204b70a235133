"""`--follow` beside workers whose clocks are skewed by different offsets.

One worker's clock runs 2 s ahead of the frontend's, another's 3 s behind. The follower
judged "could this worker span's caller still log?" by log time: the ahead worker moved
the logs' latest time, the behind worker stamped its spans seconds before it, so two
worker spans of callers whose lines were still on their way (flushed a moment later,
well inside --settle) looked read long after their callers could have logged. The
duplicate was printed naming the worker spans and citing their lines, where `analyze`
of the same files names the callers. It now also waits the settle time in wall-clock
time from when such a worker span was read, which no clock skew moves.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ridtrace.contract import WORKER_END, WORKER_START
from tests.cli.helpers import analyze_json
from tests.forensics.helpers import rt, ts
from tests.support.follower import FollowProcess, start_follower

RID = "7"
AHEAD, BEHIND = 2.0, -3.0  # each worker's clock against the frontend's
SETTLE = "2s"


def _marker(name: str, at: float, **more: Any) -> str:
    """A one-line span with an Unlinked error: printed the moment it is read, so the
    test knows the lines written before it in its file were read."""
    return rt("response.unlinked", time=ts(at), request_id=f"mark-{name}",
              trace_id=f"{name * 16:0>32}", span_id=name * 16, **more)


def _marked(follower: FollowProcess, name: str) -> bool:
    return any(p.json()["request_id"] == f"mark-{name}" for p in follower.findings())


def _append(path: Path, *lines: str) -> None:
    with path.open("a") as fh:
        fh.write("".join(line + "\n" for line in lines))


def _front(name: str, start: float, end: float, rid: str = RID) -> tuple[str, str]:
    ctx: dict[str, Any] = {"trace_id": f"{name * 16:0>32}", "span_id": name * 16,
                           "request_id": rid}
    return (rt("request.start", time=ts(start), method="POST", path="/v1/completions", **ctx),
            rt("request.end", time=ts(end), status=200, outcome="ok", fp_in=f"in-{name}",
               fp_out=f"out-{name}", **ctx))


def _work(name: str, start: float, end: float, skew: float, service: str,
          rid: str = RID) -> tuple[str, str]:
    # The worker's span id differs from its caller's in digits, not case: hex ids match
    # whatever their case, so "CCCC…" would be the caller's own span.
    ctx: dict[str, Any] = {"trace_id": f"{name * 16:0>32}", "span_id": name * 8 + "9" * 8,
                           "parent_span_id": name * 16, "service": service, "request_id": rid}
    return (rt(WORKER_START, time=ts(start + skew), fp_in=f"in-{name}", **ctx),
            rt(WORKER_END, time=ts(end + skew), outcome="ok", fp_in=f"in-{name}",
               fp_out=f"out-{name}", **ctx))


def test_a_duplicate_beside_skewed_workers_names_the_callers_as_analyze_does(
    tmp_path: Path,
) -> None:
    front = tmp_path / "frontend.jsonl"
    ahead, behind = tmp_path / "worker-8101.jsonl", tmp_path / "worker-8102.jsonl"
    for path in (front, ahead, behind):
        path.touch()
    follower = start_follower([str(tmp_path)], "--settle", SETTLE, "--poll-interval", "0.1s")
    try:
        # Earlier traffic: a caller served by the worker whose clock runs ahead.
        _append(front, *_front("c", 0.0, 0.5, rid="x"))
        _append(ahead, *_work("c", 0.05, 0.45, AHEAD, "worker-8101", rid="x"),
                _marker("m", 0.5 + AHEAD, service="worker-8101"))
        follower.wait_for(lambda: _marked(follower, "m"), timeout=30,
                          what="the earlier traffic read")
        # What was read then is now a settle time old: the old judgement took every log
        # as holding every line up to the ahead worker's clock.
        time.sleep(2.5)
        # Two callers of one id at once; the behind worker logs their spans first, the
        # frontend flushes its lines a moment later (well inside --settle).
        a_start, a_end = _front("a", 1.0, 1.5)
        b_start, b_end = _front("b", 1.05, 1.55)
        a_work = _work("a", 1.01, 1.4, BEHIND, "worker-8102")
        b_work = _work("b", 1.06, 1.45, BEHIND, "worker-8102")
        _append(behind, a_work[0], b_work[0], _marker("n", 1.07 + BEHIND, service="worker-8102"))
        follower.wait_for(lambda: _marked(follower, "n"), timeout=30,
                          what="the worker spans read")
        _append(front, a_start, b_start)
        _append(behind, a_work[1], b_work[1])
        _append(front, a_end, b_end, _marker("o", 1.6))
        follower.wait_for(lambda: _marked(follower, "o"), timeout=30, what="every line read")
        follower.wait_for(
            lambda: any(p.json()["kind"] == "duplicate_in_flight" for p in follower.findings()),
            timeout=30, what="the duplicate")
    finally:
        code = follower.stop()
    live = [p.json() for p in follower.findings() if p.json()["kind"] == "duplicate_in_flight"]
    # The reference batch read, in-process (tests/cli/helpers): not what is under test.
    report = analyze_json(str(tmp_path))[1]
    batch = [f for f in report["findings"] if f["kind"] == "duplicate_in_flight"]
    assert [(f["kind"], f["span_id"]) for f in batch] == [("duplicate_in_flight", "a" * 16)]
    assert [(f["kind"], f["span_id"], f["detail"], f["evidence"]) for f in live] == [
        (f["kind"], f["span_id"], f["detail"], f["evidence"]) for f in batch]
    assert code == 1
