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

RID = "rollout-7"


def caller(name: str, start: float, end: float, worker_end: float, *,
           skew: float) -> list[tuple[float, str, str]]:
    """(true time, file, line) of one legacy caller and its worker span: the frontend's
    request.start logs a minted id, its later lines and its worker the client's."""
    # The worker's own span id differs from its caller's in digits, not case: hex ids
    # match whatever their case, so "AAAA…" would be the caller's own span.
    span, work = name * 16, (name * 8 + "9" * 8 if name.isalpha() else "9" * 16)
    trace = f"{span:0>32}"
    front: dict[str, Any] = {"trace_id": trace, "span_id": span}
    ctx: dict[str, Any] = {"trace_id": trace, "span_id": work, "parent_span_id": span,
                           "service": "worker-8101", "request_id": RID}
    return [
        (start, "frontend.jsonl", rt("request.start", time=ts(start), request_id=f"m-{name}",
                                     method="POST", path="/v1/completions", **front)),
        (start + 0.01, "worker.jsonl", rt(WORKER_START, time=ts(start + 0.01 + skew),
                                          fp_in=f"in-{name}", **ctx)),
        (worker_end, "worker.jsonl", rt(WORKER_END, time=ts(worker_end + skew), outcome="ok",
                                        fp_out=f"out-{name}", **ctx)),
        (end, "frontend.jsonl", rt("request.end", time=ts(end), request_id=RID, status=200,
                                   outcome="ok", fp_in=f"in-{name}",
                                   fp_out=f"out-{name}", **front)),
    ]


def replayed(tmp_path: Path, writes: list[tuple[float, str, str]],
             poll: float) -> tuple[list[Any], list[Any]]:
    """(printed live, `analyze` of the final files): each line written at its true time,
    a poll every `poll` seconds of the run."""
    writes = sorted(writes)
    ticks = Ticks()
    t0 = T0.timestamp()
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, settle_s=1.0),
                        ticks=ticks, clock=lambda: t0 + ticks.now - 100.0 + 10.0)
    live: list[Any] = []
    try:
        follower.start()
        i = 0
        for step in range(1, int(3 / poll)):
            tick = 10.0 + step * poll
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
    return live, batch_errors(tmp_path)


def test_a_worker_clock_behind_loses_no_later_duplicate(tmp_path: Path) -> None:
    live, batch = replayed(tmp_path, [
        # Two callers of the id at once (a duplicate), then two more a second later.
        *caller("a", 10.0, 10.2, 10.15, skew=-3.0), *caller("b", 10.05, 10.25, 10.2, skew=-3.0),
        *caller("c", 11.0, 11.2, 11.15, skew=-3.0), *caller("d", 11.05, 11.25, 11.2, skew=-3.0),
    ], poll=0.05)
    assert [k[0] for k in batch] == ["duplicate_in_flight"] * 2
    assert sorted(live) == batch


def test_a_worker_clock_ahead_adds_no_earlier_caller_to_a_duplicate(tmp_path: Path) -> None:
    # The worker 2 s ahead, polls 0.3 s apart: caller a's worker span, stamped ahead of
    # what the frontend's log showed, was taken after the next holders of the id (b and
    # c, together) had come, and joined them by a's start although a had ended before
    # they started: the finding named a first, `analyze` names b.
    live, batch = replayed(tmp_path, [
        *caller("a", 10.0, 10.1, 10.09, skew=2.0),
        *caller("b", 10.25, 10.26, 10.258, skew=2.0), *caller("c", 10.2501, 10.34, 10.33, skew=2.0),
    ], poll=0.3)
    assert [k[0] for k in batch] == ["duplicate_in_flight"]
    assert sorted(live) == batch


def test_a_worker_span_read_before_its_worker_line_holds_no_duplicate_with_its_clock(
    tmp_path: Path,
) -> None:
    # A worker run under the middleware writes request.start, then worker.start 80 µs
    # later. Read in the poll before its worker.start and before its caller's lines, on
    # a clock 60 ms behind, its span was taken for a caller of its own at its own time,
    # inside the previous holder of the id: a duplicate (exit 1) of two back-to-back
    # callers, where `analyze` corrects the clock and finds none.
    a, b, work = "a" * 16, "b" * 16, "d" * 16
    front_a = {"trace_id": "a" * 32, "span_id": a}
    front_b = {"trace_id": "b" * 32, "span_id": b}
    hop = {"trace_id": "b" * 32, "span_id": work, "parent_span_id": b,
           "service": "worker-8102", "request_id": RID}
    skew = -0.06
    live, batch = replayed(tmp_path, [
        (10.0, "frontend.jsonl", rt("request.start", time=ts(10.0), request_id=RID,
                                    method="POST", path="/v1/completions", **front_a)),
        (10.4, "frontend.jsonl", rt("request.end", time=ts(10.4), request_id=RID, status=200,
                                    outcome="ok", **front_a)),
        # B's worker flushes its first line first; the rest comes a poll later.
        (10.43, "worker.jsonl", rt("request.start", time=ts(10.4205 + skew), method="POST",
                                   path="/v1/work", **hop)),
        (10.52, "frontend.jsonl", rt("request.start", time=ts(10.42), request_id=RID,
                                     method="POST", path="/v1/completions", **front_b)),
        (10.52, "worker.jsonl", rt(WORKER_START, time=ts(10.42058 + skew), fp_in="in-b",
                                   **hop)),
        (10.8, "worker.jsonl", rt(WORKER_END, time=ts(10.79 + skew), outcome="ok",
                                  fp_out="out-b", **hop)),
        (10.8, "worker.jsonl", rt("request.end", time=ts(10.7902 + skew), status=200,
                                  outcome="ok", **hop)),
        (10.81, "frontend.jsonl", rt("request.end", time=ts(10.8), request_id=RID, status=200,
                                     outcome="ok", fp_in="in-b", fp_out="out-b", **front_b)),
    ], poll=0.05)
    assert batch == []
    assert live == []
