"""Live duplicates with a worker whose clock runs behind its frontend's.

Seen replaying a real legacy-policy frontend and worker's logs with the worker's times
3 s behind, each line written when it was in the run: `analyze` of the final files
reported 58 duplicate ids, the follower printed 5. A worker span stamped before its
caller started was taken first, its caller not known yet, so it stood for its caller at
that earlier time and joined the id's previous holders, an already reported cluster;
that cluster then took in every later holder of the id, whose duplicates were never
printed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ridtrace.contract import WORKER_END, WORKER_START
from ridtrace.forensics.live.follow import Follower, FollowSettings
from tests.forensics.helpers import T0, rt, ts
from tests.support.lagged_replay import Ticks, batch_errors, key

SKEW = -3.0  # the worker's clock, against the frontend's
RID = "rollout-7"


def caller(name: str, start: float, end: float, worker_end: float,
           outcome: str = "ok") -> list[tuple[float, str, str]]:
    """(true time, file, line) of one legacy caller and its worker span: the frontend's
    request.start logs a minted id, its later lines and its worker the client's."""
    span, work = name * 16, (name.upper() if name.isalpha() else "9") * 16
    trace = f"{span:0>32}"
    front: dict[str, Any] = {"trace_id": trace, "span_id": span}
    ctx: dict[str, Any] = {"trace_id": trace, "span_id": work, "parent_span_id": span,
                           "service": "worker-8101", "request_id": RID}
    return [
        (start, "frontend.jsonl", rt("request.start", time=ts(start), request_id=f"m-{name}",
                                     method="POST", path="/v1/completions", **front)),
        (start + 0.01, "worker.jsonl", rt(WORKER_START, time=ts(start + 0.01 + SKEW),
                                          fp_in=f"in-{name}", **ctx)),
        (worker_end, "worker.jsonl", rt(WORKER_END, time=ts(worker_end + SKEW), outcome="ok",
                                        fp_out=f"out-{name}", **ctx)),
        (end, "frontend.jsonl", rt("request.end", time=ts(end), request_id=RID, status=200,
                                   outcome=outcome, fp_in=f"in-{name}",
                                   fp_out=f"out-{name}", **front)),
    ]


def test_a_worker_clock_behind_loses_no_later_duplicate(tmp_path: Path) -> None:
    writes = sorted([
        # Two callers of the id at once (a duplicate), then two more a second later.
        *caller("a", 10.0, 10.2, 10.15), *caller("b", 10.05, 10.25, 10.2),
        *caller("c", 11.0, 11.2, 11.15), *caller("d", 11.05, 11.25, 11.2),
    ])
    ticks = Ticks()
    t0 = T0.timestamp()
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, settle_s=1.0),
                        ticks=ticks, clock=lambda: t0 + ticks.now - 100.0 + 10.0)
    live: list[Any] = []
    try:
        follower.start()
        i = 0
        for step in range(1, 60):  # polls every 50 ms of the run, the lines as written
            tick = 10.0 + step * 0.05
            while i < len(writes) and writes[i][0] <= tick:
                _, name, line = writes[i]
                with (tmp_path / name).open("a") as fh:
                    fh.write(line + "\n")
                i += 1
            ticks.now = 100.0 + tick - 10.0
            found, _ = follower.poll()
            live.extend(map(key, found))
        follower.run(lambda f: live.append(key(f)) is None, stop=lambda: True)
    finally:
        follower.close()
    batch = batch_errors(tmp_path)
    assert [k[0] for k in batch] == ["duplicate_in_flight"] * 2
    assert sorted(live) == batch
