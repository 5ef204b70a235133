"""A chain of callers under one id, judged live as `analyze` judges it.

`analyze` cuts an id's holders into clusters by start: a holder that starts once every
earlier one has ended opens a new cluster. Live, a worker span read before its caller
stands for the caller by its own start until the caller comes: caller b's worker,
logged (and read) while caller a's end was still on its way, joined a's cluster, a
still open then. Once b's lines came, a had ended exactly when b started (back to back,
no overlap) and c overlapped b: `analyze` reports the duplicate of b and c, live printed
"3 requests ... (spans a, b, c)" under a's name and time, citing a's lines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ridtrace.contract import WORKER_END, WORKER_START
from ridtrace.forensics.live.follow import Follower, FollowSettings
from tests.forensics.helpers import T0, rt, ts
from tests.support.lagged_replay import Ticks, batch_errors, key

RID = "7"


def _ctx(name: str, *, worker: bool = False) -> dict[str, Any]:
    span = name * 16
    ctx: dict[str, Any] = {"trace_id": f"{span:0>32}", "request_id": RID}
    if worker:
        # Its own span id differs from its caller's in digits, not case: hex ids match
        # whatever their case, so "AAAA…" would be the caller's own span.
        ctx.update(span_id=name * 8 + "9" * 8, parent_span_id=span, service="worker-8101")
    else:
        ctx.update(span_id=span)
    return ctx


def _start(name: str, at: float) -> str:
    return rt("request.start", time=ts(at), method="POST", path="/v1/completions", **_ctx(name))


def _end(name: str, at: float) -> str:
    return rt("request.end", time=ts(at), status=200, outcome="ok", fp_in=f"in-{name}",
              fp_out=f"out-{name}", **_ctx(name))


def _work_start(name: str, at: float) -> str:
    return rt(WORKER_START, time=ts(at), fp_in=f"in-{name}", **_ctx(name, worker=True))


def _work_end(name: str, at: float) -> str:
    return rt(WORKER_END, time=ts(at), outcome="ok", fp_in=f"in-{name}",
              fp_out=f"out-{name}", **_ctx(name, worker=True))


def test_a_caller_ended_when_the_next_started_is_not_chained_in_by_a_worker_read_first(
    tmp_path: Path,
) -> None:
    # a [6 s, 10 s], b [10 s, 22 s], c [17 s, 29 s]: a and b back to back, b and c a
    # duplicate. Each step is what one poll finds written (the worker's log is flushed
    # ahead of the frontend's, by less than the settle time).
    steps = [
        {"worker.jsonl": [_work_start("a", 6.01), _work_end("a", 9.99), _work_start("b", 10.01)],
         "frontend.jsonl": [_start("a", 6.0)]},
        {"worker.jsonl": [_work_start("c", 17.01), _work_end("b", 21.99)]},
        {"frontend.jsonl": [_end("a", 10.0)]},
        {"frontend.jsonl": [_start("b", 10.0), _start("c", 17.0)]},
        {"frontend.jsonl": [_end("b", 22.0)], "worker.jsonl": [_work_end("c", 28.99)]},
        {"frontend.jsonl": [_end("c", 29.0)]},
    ]
    ticks = Ticks()
    t0 = T0.timestamp()
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, settle_s=1.0),
                        ticks=ticks, clock=lambda: t0 + 30.0 + ticks.now)
    live: list[Any] = []
    try:
        follower.start()
        for step in steps:
            for name, lines in step.items():
                with (tmp_path / name).open("a") as fh:
                    fh.write("".join(line + "\n" for line in lines))
            ticks.now += 0.3  # the frontend's lines a flush behind, inside the settle time
            found, _ = follower.poll()
            live.extend(found)
        follower.run(lambda finding: live.append(finding) or True, stop=lambda: True)
    finally:
        follower.close()
    batch = batch_errors(tmp_path)
    assert batch == [("duplicate_in_flight", "b" * 16, RID)]
    assert sorted(map(key, live)) == batch
    assert "(spans " + "b" * 16 + ", " + "c" * 16 + ")" in live[0]["detail"]
