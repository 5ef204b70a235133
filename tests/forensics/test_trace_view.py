"""`ridtrace trace`'s model on tiny hand-made logs: verdicts, order, limit, skew, sides."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ridtrace.contract import WORKER_END, WORKER_START
from ridtrace.forensics.reading.events import load_events
from ridtrace.forensics.records.spans import build_requests
from ridtrace.forensics.views.trace_export import trace_document
from ridtrace.forensics.views.trace_model import build_trace
from ridtrace.forensics.views.trace_rows import TraceView
from ridtrace.forensics.views.verdicts import CROSSED, NO_CALLER, NO_OUTPUT, OWN_OUTPUT
from tests.forensics.helpers import rt, rt_request, ts

# Ids as long as the contract lets them be shown whole (a UUID is 36 characters).
RID = "0b1c2d3e-4f50-4a61-b728-394a5b6c7d8e"
XRID_A = "client-a-" + "a" * 27
XRID_B = "client-b-" + "b" * 27
XRID_C = "client-c-" + "c" * 27
SPAN_A, SPAN_B, SPAN_C = "a" * 16, "b" * 16, "c" * 16
WORK_A, WORK_B, WORK_C = "1a" * 8, "1b" * 8, "1c" * 8


def worker_lines(
    span: str, parent: str, rid: str, start: float, end: float, *, fp_in: str,
    fp_out: str | None, skew: float = 0.0, service: str = "worker-8101",
) -> list[str]:
    """worker.start + worker.end of one worker span (its file's clock `skew` s off)."""
    ctx: dict[str, Any] = {"request_id": rid, "trace_id": f"{parent:0>32}", "span_id": span,
                           "parent_span_id": parent, "service": service}
    end_fields: dict[str, Any] = {"fp_out": fp_out} if fp_out else {}
    return [
        rt(WORKER_START, time=ts(start + skew), **ctx, fp_in=fp_in),
        rt(WORKER_END, time=ts(end + skew), **ctx, outcome="ok", **end_fields),
    ]


def write_incident(out: Path, *, skew: float = 0.0) -> list[str]:
    """Three callers: A and B hold one request_id at once and B got A's output; C is fine.

    A failed (no output), B was delivered A's worker output, C (later, another id) got
    its own. The worker file's clock is `skew` seconds ahead of the frontend's.
    """
    out.mkdir(parents=True, exist_ok=True)
    front = [
        *rt_request(SPAN_A, RID, 0.0, 1.0, xrid=XRID_A, fp_in="in-a"),
        *rt_request(SPAN_B, RID, 0.2, 1.2, xrid=XRID_B, fp_in="in-b", fp_out="out-a"),
        *rt_request(SPAN_C, "other-id", 5.0, 5.5, xrid=XRID_C, fp_in="in-c", fp_out="out-c"),
    ]
    work = [
        *worker_lines(WORK_A, SPAN_A, RID, 0.1, 0.9, fp_in="in-a", fp_out="out-a", skew=skew),
        *worker_lines(WORK_B, SPAN_B, RID, 0.3, 1.1, fp_in="in-b", fp_out="out-b", skew=skew),
        *worker_lines(WORK_C, SPAN_C, "other-id", 5.1, 5.4, fp_in="in-c", fp_out="out-c",
                      skew=skew, service="worker-8102"),
    ]
    (out / "frontend.jsonl").write_text("\n".join(front) + "\n")
    (out / "worker.jsonl").write_text("\n".join(sorted(work, key=lambda s: s[9:40])) + "\n")
    return [str(out / "frontend.jsonl"), str(out / "worker.jsonl")]


def view_of(paths: list[str], ident: str, limit: int | None = 10) -> TraceView:
    events = load_events(paths).events
    return build_trace(events, build_requests(events), ident, limit=limit)


def test_verdicts_from_fingerprints(tmp_path: Path) -> None:
    view = view_of(write_incident(tmp_path), RID)
    by_span = {b.span_id: b for b in view.blocks}
    assert by_span[SPAN_A].verdict.label == NO_OUTPUT
    crossed = by_span[SPAN_B].verdict
    assert crossed.label == CROSSED
    assert crossed.got_output_of is not None
    assert (crossed.got_output_of.span_id, crossed.got_output_of.request_id,
            crossed.got_output_of.x_request_id, crossed.got_output_of.worker_span_id) == (
        SPAN_A, RID, XRID_A, WORK_A)
    own = view_of(write_incident(tmp_path), XRID_C).blocks
    assert [b.verdict.label for b in own] == [OWN_OUTPUT]


def test_header_facts_and_findings(tmp_path: Path) -> None:
    view = view_of(write_incident(tmp_path), RID)
    assert view.matched == 2 and view.more == 0
    b = next(b for b in view.blocks if b.span_id == SPAN_B)
    assert (b.request_id, b.x_request_id, b.route, b.status, b.outcome) == (
        RID, XRID_B, "/v1/chat/completions", "200", "ok")
    assert b.duration_ms == 1000.0
    # B's own worker output reached nobody: the unlinked rule's "lost output" is B's too.
    assert b.findings == ("crossed_stream", "duplicate_in_flight", "unlinked")
    assert b.overlaps == (SPAN_A,)


def test_a_callers_duration_ends_with_its_answer_not_its_last_line(tmp_path: Path) -> None:
    # The legacy policy's detached pump logs its Unlinked response under the caller's ids
    # after the caller got its 500: the request lasted 20 ms, its lines 80 ms.
    tmp_path.mkdir(exist_ok=True)
    ctx = {"request_id": RID, "trace_id": f"{SPAN_A:0>32}", "span_id": SPAN_A}
    (tmp_path / "frontend.jsonl").write_text("\n".join([
        rt("request.start", time=ts(0.0), **ctx, path="/v1/chat/completions"),
        rt("request.end", time=ts(0.02), **ctx, status=500, outcome="error"),
        rt("response.unlinked", time=ts(0.08), **ctx),
    ]) + "\n")
    (block,) = view_of([str(tmp_path)], RID).blocks
    assert block.duration_ms == 20.0
    assert [s.end_ms for s in block.spans] == [80.0]  # the id was held until then
    doc = trace_document(view_of([str(tmp_path)], RID))
    assert doc["requests"][0]["duration_ms"] == 20.0


def test_events_in_time_order_relative_to_request_start(tmp_path: Path) -> None:
    view = view_of(write_incident(tmp_path), XRID_B)
    (block,) = view.blocks
    assert [(e.ms, e.side, e.event) for e in block.events] == [
        (0.0, "frontend", "request.start"),
        (100.0, "worker-0", "worker.start"),
        (900.0, "worker-0", "worker.end"),
        (1000.0, "frontend", "request.end"),
    ]
    assert [e.line for e in block.events] == [3, 2, 4, 4]  # worker lines sorted by time
    assert [(s.side, s.span_id) for s in block.spans] == [("frontend", SPAN_B),
                                                         ("worker-0", WORK_B)]


def test_workers_numbered_by_file_and_service_in_sorted_order(tmp_path: Path) -> None:
    view = view_of(write_incident(tmp_path), XRID_C)
    assert [s.side for s in view.blocks[0].spans] == ["frontend", "worker-1"]
    assert set(view.sides) == {"worker-0", "worker-1"}
    assert view.sides["worker-1"].endswith("worker.jsonl (worker-8102)")


def test_error_findings_first_then_time_and_limit(tmp_path: Path) -> None:
    paths = write_incident(tmp_path)
    front = Path(paths[0])
    # A clean caller that reused B's client id a few seconds *before* the incident.
    early = rt_request("d" * 16, "fresh", -3.0, -2.5, xrid=XRID_B, fp_in="in-d")
    front.write_text("\n".join(early) + "\n" + front.read_text())
    view = view_of(paths, XRID_B)
    assert [b.span_id for b in view.blocks] == [SPAN_B, "d" * 16]
    assert view.blocks[0].findings and not view.blocks[1].findings
    both = view_of(paths, RID, limit=1)
    assert both.matched == 2 and both.more == 1 and len(both.blocks) == 1
    assert both.blocks[0].span_id == SPAN_B  # the crossed caller first, though it came later


def test_limit_none_keeps_all(tmp_path: Path) -> None:
    view = view_of(write_incident(tmp_path), RID, limit=None)
    assert view.matched == len(view.blocks) == 2 and view.more == 0


def test_skew_corrected_and_events_shifted_alike(tmp_path: Path) -> None:
    paths = write_incident(tmp_path, skew=0.5)
    view = view_of(paths, XRID_B)
    offset = view.offsets_ms[paths[1]]
    assert offset < 0  # the worker clock ran ahead
    (block,) = view.blocks
    worker = [e for e in block.events if e.side != "frontend"]
    assert [e.ms for e in worker] == [100.0 + 500.0 + offset, 900.0 + 500.0 + offset]
    bar = block.spans[1]
    assert bar.start_ms >= 0.0 and bar.end_ms <= block.duration_ms  # inside its caller now
    assert view_of(write_incident(tmp_path / "same"), XRID_B).offsets_ms == {}


def test_worker_spans_without_their_caller(tmp_path: Path) -> None:
    paths = write_incident(tmp_path)
    view = view_of(paths[1:], RID)  # the worker file alone
    assert view.matched == 2
    assert {b.verdict.label for b in view.blocks} == {"no caller in logs"}
    assert {b.span_id for b in view.blocks} == {SPAN_A, SPAN_B}  # grouped by their caller
    assert all(b.spans[0].side == "worker-0" and b.duration_ms == 800.0 for b in view.blocks)


def test_only_the_shown_requests_are_built(tmp_path: Path, monkeypatch: Any) -> None:
    # A legacy incident: hundreds of callers held one id. Each caller's block was built
    # (its spans, overlaps and rows, a few milliseconds of pandas each) to keep ten:
    # 3,000 callers took 17 s. The ranking needs only starts and findings.
    from ridtrace.forensics.views import trace_model

    lines = [line for i in range(300)
             for line in rt_request(f"{i + 1:016x}", "rollout-7", i * 0.01, i * 0.01 + 0.5)]
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    built = []
    original = trace_model._block

    def counting(root_id: str, *args: Any) -> trace_model.RequestBlock:
        built.append(root_id)
        return original(root_id, *args)

    monkeypatch.setattr(trace_model, "_block", counting)
    view = view_of([str(tmp_path / "frontend.jsonl")], "rollout-7", limit=10)
    assert view.matched == 300 and len(view.blocks) == 10
    assert len(built) == 10
    # The same ten, in the same order, as ranking every built block would give.
    everything = view_of([str(tmp_path / "frontend.jsonl")], "rollout-7", limit=None)
    assert [b.span_id for b in view.blocks] == [b.span_id for b in everything.blocks[:10]]
    assert all(b.findings == ("duplicate_in_flight",) for b in view.blocks)
    # The ranking agrees with what the built blocks say: by findings, then by start.
    keys = [(min(map(trace_model.ERROR_KINDS.index, b.findings), default=3), b.start)
            for b in everything.blocks]
    assert keys == sorted(keys)


def test_blocks_are_built_in_one_pass_not_a_frame_pass_per_block(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # Each block sorted, masked and itertuple'd a frame of its own rows: about 3 ms a
    # block, so `trace --limit 0` on an id thousands of requests share took minutes.
    # Counted, not timed: the rows become Python objects a fixed number of times.
    import pandas as pd

    from ridtrace.testing.synth import SynthSpec, write_logs

    write_logs(tmp_path, SynthSpec(requests=120, noise_every=0))
    for log in tmp_path.glob("*.jsonl"):
        text = log.read_text()
        log.write_text(re.sub(r'"x_request_id":"rollout-[^"]*"', '"x_request_id":"shared"', text))
    events = load_events([str(tmp_path)]).events
    requests = build_requests(events)
    calls = 0
    itertuples = pd.DataFrame.itertuples

    def counted(self: pd.DataFrame, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return itertuples(self, *args, **kwargs)

    monkeypatch.setattr(pd.DataFrame, "itertuples", counted)
    view = build_trace(events, requests, "shared", limit=None)
    assert len(view.blocks) > 40
    assert calls <= 8, calls  # a handful whatever the block count (was 2 a block)


def test_one_span_id_in_two_traces_is_two_requests(tmp_path: Path) -> None:
    # Two callers logged span id SPAN_A in different traces and held RID at once; the
    # first was delivered the second's output. Grouped by span id they were one request
    # with both callers' spans and lines, own output, in no finding.
    ta, tb = "a" * 32, "b" * 32
    front = [*rt_request(SPAN_A, RID, 0.0, 1.0, trace=ta, fp_in="in-a", fp_out="out-b"),
             *rt_request(SPAN_A, RID, 0.2, 1.2, trace=tb, fp_in="in-b", fp_out="out-b")]
    work = []
    for span, trace, start, fp_in, fp_out in ((WORK_A, ta, 0.1, "in-a", "out-a"),
                                              (WORK_B, tb, 0.3, "in-b", "out-b")):
        ctx = {"request_id": RID, "trace_id": trace, "span_id": span, "parent_span_id": SPAN_A}
        work += [rt(WORKER_START, time=ts(start), **ctx, fp_in=fp_in),
                 rt(WORKER_END, time=ts(start + 0.5), **ctx, outcome="ok", fp_out=fp_out)]
    (tmp_path / "frontend.jsonl").write_text("\n".join(front) + "\n")
    (tmp_path / "worker.jsonl").write_text("\n".join(work) + "\n")
    view = view_of([str(tmp_path / "frontend.jsonl"), str(tmp_path / "worker.jsonl")], RID)
    assert view.matched == 2
    by_trace = {b.trace_id: b for b in view.blocks}
    crossed, own = by_trace[ta], by_trace[tb]
    assert [bar.span_id for bar in crossed.spans][1:] == [WORK_A]
    assert [bar.span_id for bar in own.spans][1:] == [WORK_B]
    assert len(crossed.events) == len(own.events) == 4
    assert (crossed.verdict.label, own.verdict.label) == (CROSSED, OWN_OUTPUT)
    assert crossed.findings == ("crossed_stream", "duplicate_in_flight", "unlinked")  # out-a lost
    doc = trace_document(view)
    assert {r["span_id"] for r in doc["requests"]} == {SPAN_A}  # as logged, beside its trace
    record = next(r for r in doc["requests"] if r["trace_id"] == ta)
    assert record["got_output_of"]["span_id"] == SPAN_A
    assert record["got_output_of"]["worker_span_id"] == WORK_B
    assert record["overlaps"] == [SPAN_A]


def test_requests_starting_in_one_microsecond_overlap_as_analyze_has_it(tmp_path: Path) -> None:
    # A zero-duration request at the start of another's span held the id while it did:
    # analyze reports the duplicate; trace showed both in no finding, no overlap.
    front = [*rt_request(SPAN_A, RID, 3.0, 5.0, fp_in="in-a", fp_out="out-a"),
             *rt_request(SPAN_B, RID, 3.0, 3.0)]
    (tmp_path / "frontend.jsonl").write_text("\n".join(front) + "\n")
    view = view_of([str(tmp_path / "frontend.jsonl")], RID)
    by_span = {b.span_id: b for b in view.blocks}
    assert by_span[SPAN_A].overlaps == (SPAN_B,) and by_span[SPAN_B].overlaps == (SPAN_A,)
    assert by_span[SPAN_A].findings == by_span[SPAN_B].findings == ("duplicate_in_flight",)


def test_a_caller_known_by_its_worker_span_is_in_the_duplicate_analyze_reports(
    tmp_path: Path,
) -> None:
    # Caller C's frontend logs are absent; its worker span held RID while caller A did.
    # analyze counts the worker span for C and reports the duplicate; trace showed both
    # in no finding.
    front = rt_request(SPAN_A, RID, 10.0, 12.0, fp_in="in-a", fp_out="out-a")
    work = [*worker_lines(WORK_A, SPAN_A, RID, 10.1, 11.9, fp_in="in-a", fp_out="out-a"),
            *worker_lines(WORK_C, SPAN_C, RID, 11.0, 13.0, fp_in="in-c", fp_out="out-c")]
    (tmp_path / "frontend.jsonl").write_text("\n".join(front) + "\n")
    (tmp_path / "worker.jsonl").write_text("\n".join(sorted(work, key=lambda s: s[9:40])) + "\n")
    view = view_of([str(tmp_path / "frontend.jsonl"), str(tmp_path / "worker.jsonl")], RID)
    by_span = {b.span_id: b for b in view.blocks}
    assert by_span[SPAN_C].verdict.label == NO_CALLER
    assert by_span[SPAN_A].overlaps == (SPAN_C,) and by_span[SPAN_C].overlaps == (SPAN_A,)
    assert by_span[SPAN_A].findings == ("duplicate_in_flight",)
    assert by_span[SPAN_C].findings[0] == "duplicate_in_flight"


def test_a_worker_whose_parent_id_is_another_traces_span_is_not_that_ones(
    tmp_path: Path,
) -> None:
    # The worker's caller (trace tb) is not in the logs, and its parent id happens to be
    # SPAN_A, the span id of caller A in another trace: it was shown as A's own worker,
    # and the duplicate analyze reports between them was not shown.
    tb = "b" * 32
    front = rt_request(SPAN_A, RID, 2.0, 4.0, fp_in="in-a", fp_out="out-a")
    ctx = {"request_id": RID, "trace_id": tb, "span_id": WORK_B, "parent_span_id": SPAN_A}
    work = [*worker_lines(WORK_A, SPAN_A, RID, 2.1, 3.9, fp_in="in-a", fp_out="out-a"),
            rt(WORKER_START, time=ts(2.2), fp_in="in-b", **ctx),
            rt(WORKER_END, time=ts(3.8), outcome="ok", fp_out="out-b", **ctx)]
    (tmp_path / "frontend.jsonl").write_text("\n".join(front) + "\n")
    (tmp_path / "worker.jsonl").write_text("\n".join(work) + "\n")
    view = view_of([str(tmp_path / "frontend.jsonl"), str(tmp_path / "worker.jsonl")], RID)
    by_trace = {b.trace_id: b for b in view.blocks}
    caller, other = by_trace[f"{SPAN_A:0>32}"], by_trace[tb]
    assert [bar.span_id for bar in caller.spans] == [SPAN_A, WORK_A]
    assert other.verdict.label == NO_CALLER and [b.span_id for b in other.spans] == [WORK_B]
    assert caller.findings == ("duplicate_in_flight",)
    assert {r["span_id"] for r in trace_document(view)["requests"]} == {SPAN_A}  # as logged


def test_a_cut_short_callers_prefix_equal_to_a_shorter_finished_reply_is_not_crossed() -> None:
    # As the crossed_stream rule: a caller that hung up was delivered a prefix of its
    # reply, and a prefix can be another prompt's whole (shorter) reply.
    import pandas as pd

    from ridtrace.forensics.views.verdicts import CUT_SHORT, OutputIndex

    def row(span: str, side: str, fp_in: str, fp_out: str, outcome: str,
            parent: str | None = None) -> dict[str, Any]:
        return {"span_id": span, "parent_span_id": parent, "side": side, "fp_in": fp_in,
                "fp_out": fp_out, "outcome": outcome, "request_id": span,
                "x_request_id": None, "start": pd.Timestamp("2026-12-01T10:00:00Z"),
                "end": pd.Timestamp("2026-12-01T10:00:01Z")}

    requests = pd.DataFrame([
        row("a", "frontend", "inA", "short", "cancelled"),
        row("wa", "worker", "inA", "longer", "cancelled", parent="a"),
        row("b", "frontend", "inB", "short", "ok"),
        row("wb", "worker", "inB", "short", "ok", parent="b"),
    ])
    verdicts = OutputIndex(requests).verdicts(requests[requests["side"] == "frontend"])
    assert (verdicts["a"].label, verdicts["b"].label) == (CUT_SHORT, OWN_OUTPUT)


def test_a_caller_whose_own_work_was_not_read_is_no_crossed_stream() -> None:
    # As the crossed_stream rule: the second caller's worker log not given, its one-token
    # reply equal to the first's proves nothing; with its own work read, or its workers'
    # refusals (every one refused it), it is crossed.
    import pandas as pd

    from ridtrace.forensics.views.verdicts import NO_WORK, OutputIndex

    def row(span: str, side: str, fp_in: str, fp_out: str, outcome: str = "ok",
            parent: str | None = None) -> dict[str, Any]:
        return {"span_id": span, "parent_span_id": parent, "side": side, "fp_in": fp_in,
                "fp_out": fp_out, "outcome": outcome, "request_id": span,
                "x_request_id": None, "start": pd.Timestamp("2026-12-01T10:00:00Z"),
                "end": pd.Timestamp("2026-12-01T10:00:01Z")}

    common = [row("a", "frontend", "inA", "yes"), row("wa", "worker", "inA", "yes", parent="a"),
              row("b", "frontend", "inB", "yes")]
    for extra, label in (([], NO_WORK),
                         ([row("wb", "worker", "inB", "", "conflict", parent="b")], CROSSED),
                         ([row("wb", "worker", "inB", "no", parent="b")], CROSSED)):
        requests = pd.DataFrame([*common, *extra])
        verdicts = OutputIndex(requests).verdicts(requests[requests["side"] == "frontend"])
        assert (verdicts["a"].label, verdicts["b"].label) == (OWN_OUTPUT, label), extra
    # The work b got was made for a, which ended without it (the legacy Unlinked 500):
    # it went astray to b, whose own work never began (its worker hung before a line).
    # Only when a and b held one id (the legacy collision): else b's own short reply may
    # equal a's, its worker's log left out.
    for a_id, label in (("b", CROSSED), ("a", NO_WORK)):
        failed = {**row("a", "frontend", "inA", None, "error"), "request_id": a_id}
        requests = pd.DataFrame([failed, *common[1:]])
        verdicts = OutputIndex(requests).verdicts(requests[requests["side"] == "frontend"])
        assert verdicts["b"].label == label, a_id


def test_worker_spans_no_caller_sent_a_trace_context_to(tmp_path: Path) -> None:
    # Work sent with no traceparent (a client calling the worker itself, a Dynamo worker
    # whose caller propagated no trace context): no line of the read names a parent. The
    # caller lookup compared each span's missing parent with pandas' NA and raised, so
    # `ridtrace trace` over such a worker log crashed (exit 4) for any id.
    lines = [
        rt(WORKER_START, time=ts(0.1), request_id=RID, trace_id="1" * 32, span_id=WORK_A,
           fp_in="in-a"),
        rt(WORKER_END, time=ts(0.9), request_id=RID, trace_id="1" * 32, span_id=WORK_A,
           outcome="ok", fp_out="out-a"),
    ]
    (tmp_path / "worker.jsonl").write_text("\n".join(lines) + "\n")
    view = view_of([str(tmp_path / "worker.jsonl")], RID)
    assert view.matched == 1
    assert [b.span_id for b in view.blocks] == [WORK_A]
    assert view.blocks[0].verdict.label == "no caller in logs"
