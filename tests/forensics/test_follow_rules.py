"""The live rules: findings once, when certain; state bounded by the window."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

from ridtrace.forensics import analyze, load_events, report_json
from ridtrace.forensics.live.follow import Follower, FollowSettings
from ridtrace.forensics.live.parse import COLUMNS, Flag, SpanRows
from ridtrace.forensics.live.rules import LiveRules
from tests.forensics.helpers import rt, rt_request, ts

S = 1_000_000  # µs


def _rows(*rows: dict[str, Any]) -> SpanRows:
    base = {c: None for c in COLUMNS}
    base.update(worker=False, closing=False, request_end=False, worker_end=False,
                file="f.jsonl", trace_id="t")
    full = []
    for i, row in enumerate(rows):
        item = {**base, "first_line": i + 1, "last_line": i + 1, **row}
        if item["t1"] is None:
            item["t1"] = item["t0"]
        full.append(item)
    columns = {c: [r[c] for r in full] for c in COLUMNS}
    return SpanRows(columns, len(full), max((r["t1"] for r in full), default=0))


def _front(span: str, rid: str, t0: int, **more: Any) -> dict[str, Any]:
    return {"span_id": span, "request_id": rid, "x_request_id": rid, "t0": t0, **more}


def _end(span: str, rid: str, t: int, **more: Any) -> dict[str, Any]:
    return _front(span, rid, t, closing=True, request_end=True, outcome="ok", **more)


def test_duplicate_reported_when_the_second_start_is_seen_while_the_first_is_open() -> None:
    rules = LiveRules(window_s=600)
    assert rules.feed(_rows(_front("a", "7", 0))) == []
    found = rules.feed(_rows(_front("b", "7", 1 * S)))
    assert [(f["kind"], f["request_id"], f["span_id"]) for f in found] == [
        ("duplicate_in_flight", "7", "a")
    ]
    # Once per overlap: a third caller joining adds no second finding.
    assert rules.feed(_rows(_front("c", "7", 2 * S))) == []


def test_a_finding_at_a_time_no_datetime_holds_is_written_as_the_batch_report_does() -> None:
    # DuckDB reads year 0 and years past 9999; datetime.fromtimestamp raised ValueError
    # and ended the follow with exit 4.
    year0 = -62_154_086_400 * S  # 0000-06-01T00:00:00Z
    far = 253_402_300_800 * S + 1  # 10000-01-01T00:00:00.000001Z
    for t, text in ((year0, "0000-06-01T00:00:00.000000Z"), (far, "10000-01-01T00:00:00.000001Z"),
                    (1_790_949_791_482_913, "2026-10-02T14:03:11.482913Z")):
        rules = LiveRules(window_s=600)
        found = rules.feed(_rows(_front("a", "7", t), _front("b", "7", t + 1)))
        assert [(f["kind"], f["time"]) for f in found] == [("duplicate_in_flight", text)]


def test_back_to_back_reuse_and_a_callers_own_worker_are_no_duplicate() -> None:
    rules = LiveRules(window_s=600)
    rules.feed(_rows(_front("a", "7", 0), _end("a", "7", 1 * S)))
    assert rules.feed(_rows(_front("b", "7", 2 * S))) == []
    worker = {"span_id": "w", "request_id": "7", "t0": 2 * S, "parent_span_id": "b",
              "worker": True}
    assert rules.feed(_rows(worker)) == []


def test_an_open_span_in_a_lagging_file_waits_for_that_file() -> None:
    rules = LiveRules(window_s=600)
    rules.feed(_rows(_front("a", "7", 0, file="w.jsonl")), {"w.jsonl": 0})
    # w.jsonl is only read up to t=0: a may have ended before b started.
    assert rules.feed(_rows(_front("b", "7", 5 * S)), {"w.jsonl": 0}) == []
    found = rules.feed(_rows(_end("a", "7", 4 * S, file="w.jsonl")), {})
    assert found == []  # a ended before b started: back to back
    rules.feed(_rows(_front("c", "9", 10 * S, file="w.jsonl")), {"w.jsonl": 10 * S})
    found = rules.feed(_rows(_front("d", "9", 11 * S)), {"w.jsonl": 10 * S})
    assert found == []
    found = rules.feed(_rows(), {"w.jsonl": 12 * S})  # read past d's start: c still open
    assert [f["request_id"] for f in found] == ["9"]


def _work(span: str, parent: str, fp_in: str, fp_out: str, t: int) -> dict[str, Any]:
    return {"span_id": span, "parent_span_id": parent, "request_id": span, "t0": t,
            "worker": True, "closing": True, "worker_end": True, "outcome": "ok",
            "fp_in": fp_in, "fp_out": fp_out}


def test_crossed_stream_once_both_sides_are_in_and_its_own_work_is_done() -> None:
    rules = LiveRules(window_s=600)
    rules.feed(_rows(_front("a", "1", 0), _front("b", "2", 0)))
    own = {"span_id": "wb", "parent_span_id": "b", "request_id": "2", "t0": 1, "worker": True}
    rules.feed(_rows(own))
    # b is delivered a's output before a's worker reported it: nothing certain yet.
    assert rules.feed(_rows(_end("b", "2", 3 * S, fp_in="B", fp_out="A-out"))) == []
    assert rules.feed(_rows(_work("wa", "a", "A", "A-out", 2 * S))) == []  # wb still open
    found = rules.feed(_rows(_work("wb", "b", "B", "B-out", 4 * S)))
    assert [(f["kind"], f["span_id"]) for f in found] == [("crossed_stream", "b")]
    assert rules.feed(_rows(_end("a", "1", 5 * S, fp_in="A", fp_out="A-out"))) == []


def _crossed_with_a_killed_worker(rules: LiveRules) -> None:
    """b's first worker was killed mid-request (no worker.end ever), its retry served
    it, and b was delivered a's output."""
    rules.feed(_rows(_front("a", "1", 0), _front("b", "2", 0)))
    rules.feed(_rows({"span_id": "killed", "parent_span_id": "b", "request_id": "2",
                      "t0": 1, "worker": True}))
    rules.feed(_rows(_work("wa", "a", "A", "A-out", 2 * S), _work("wb", "b", "B", "B-out", 2 * S)))
    assert rules.feed(_rows(_end("b", "2", 3 * S, fp_in="B", fp_out="A-out"))) == []


def test_a_caller_whose_worker_never_ended_is_judged_when_that_worker_leaves_the_window(
) -> None:
    # It waited for the killed worker for good: `analyze` reports b crossed, live never.
    rules = LiveRules(window_s=10)
    _crossed_with_a_killed_worker(rules)
    assert rules.feed(_rows(_front("later", "3", 9 * S))) == []  # still in the window
    found = rules.feed(_rows(_front("z", "9", 12 * S)))
    assert [(f["kind"], f["span_id"]) for f in found] == [("crossed_stream", "b")]


def test_a_caller_whose_worker_never_ended_is_judged_when_the_follow_ends() -> None:
    rules = LiveRules(window_s=600)
    _crossed_with_a_killed_worker(rules)
    assert [(f["kind"], f["span_id"]) for f in rules.finish()] == [("crossed_stream", "b")]
    assert rules.finish() == []  # once


def _span_id(name: str) -> str:
    """A span id written in full: a short one is named in its full spelling (hex_ids)."""
    return f"{name:0>16}"


def _ctx(span: str, trace: str, parent: str | None = None) -> dict[str, Any]:
    up = {"parent_span_id": _span_id(parent)} if parent else {}
    return {"request_id": "7", "trace_id": f"{trace:0>32}", "span_id": _span_id(span), **up}


def _followed_and_analyzed(
    folder: Path, front: list[str], work: list[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The findings of a follow to the end and of `analyze` of the same two logs."""
    (folder / "frontend.jsonl").write_text("\n".join(front) + "\n")
    (folder / "worker.jsonl").write_text("\n".join(work) + "\n")
    follower = Follower([str(folder)], FollowSettings(from_start=True))
    follower.start()
    found: list[dict[str, Any]] = []
    try:
        follower.run(lambda f: found.append(f) is None, stop=lambda: True)
    finally:
        follower.close()
    return found, report_json(analyze(load_events([str(folder)])))["findings"]


def _live_and_batch(
    folder: Path, front: list[str], work: list[str]
) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """(kind, span) of the error findings of a follow to the end and of `analyze`
    (less the output no caller received, which only `analyze` judges)."""
    found, report = _followed_and_analyzed(folder, front, work)
    batch = {(f["kind"], f["span_id"]) for f in report
             if f["severity"] == "error" and "no caller received" not in f["detail"]}
    return {(f["kind"], f["span_id"]) for f in found}, batch


def _two_callers(killed_worker: bool) -> tuple[list[str], list[str]]:
    """Callers a and b, a delivered b's output; a's first worker killed when asked."""
    front = [
        rt("request.start", time=ts(0), **_ctx("a", "a")),
        rt("request.start", time=ts(0.1), **_ctx("b", "b")),
        rt("request.end", time=ts(1.0), **_ctx("a", "a"), status=200, outcome="ok",
           fp_in="in-a", fp_out="out-b"),
        rt("request.end", time=ts(1.1), **_ctx("b", "b"), status=200, outcome="ok",
           fp_in="in-b", fp_out="out-b"),
    ]
    work = [
        rt("worker.start", time=ts(0.15), **_ctx("wb", "b", "b"), fp_in="in-b"),
        rt("worker.start", time=ts(0.3), **_ctx("retry", "a", "a"), fp_in="in-a"),
        rt("worker.end", time=ts(0.9), **_ctx("retry", "a", "a"), outcome="ok",
           fp_in="in-a", fp_out="out-a"),
        rt("worker.end", time=ts(0.95), **_ctx("wb", "b", "b"), outcome="ok",
           fp_in="in-b", fp_out="out-b"),
    ]
    if killed_worker:
        work.insert(0, rt("worker.start", time=ts(0.05), **_ctx("killed", "a", "a"),
                          fp_in="in-a"))
    return front, work


def test_a_follow_to_the_end_finds_what_analyze_finds_when_a_worker_was_killed(
    tmp_path: Path,
) -> None:
    live, batch = _live_and_batch(tmp_path, *_two_callers(killed_worker=True))
    assert ("crossed_stream", _span_id("a")) in batch
    assert live == batch


def test_a_worker_running_on_after_its_caller_left_is_no_duplicate_of_a_later_caller(
    tmp_path: Path,
) -> None:
    # a left at 1 s, its worker ran on to 2 s; c took the id at 1.5 s. The callers did
    # not overlap: `analyze` reports nothing, live reported a duplicate.
    live, batch = _live_and_batch(tmp_path, [
        rt("request.start", time=ts(0), **_ctx("a", "a")),
        rt("request.end", time=ts(1.0), **_ctx("a", "a"), status=200, outcome="cancelled"),
        rt("request.start", time=ts(1.5), **_ctx("c", "c")),
        rt("request.end", time=ts(3.0), **_ctx("c", "c"), status=200, outcome="ok",
           fp_in="in-c", fp_out="out-c"),
    ], [
        rt("worker.start", time=ts(0.1), **_ctx("wa", "a", "a"), fp_in="in-a"),
        rt("worker.start", time=ts(1.6), **_ctx("wc", "c", "c"), fp_in="in-c"),
        rt("worker.end", time=ts(2.0), **_ctx("wa", "a", "a"), outcome="ok",
           fp_in="in-a", fp_out="out-a"),
        rt("worker.end", time=ts(2.9), **_ctx("wc", "c", "c"), outcome="ok",
           fp_in="in-c", fp_out="out-c"),
    ])
    assert live == batch == set()


def test_same_output_for_its_own_prompt_is_not_crossed() -> None:
    rules = LiveRules(window_s=600)
    rules.feed(_rows(_work("w1", "x", "P", "OUT", 0), _work("w2", "b", "Q", "OUT", 0)))
    assert rules.feed(_rows(_end("b", "2", S, fp_in="Q", fp_out="OUT"))) == []


def test_a_cut_short_callers_prefix_equal_to_a_shorter_finished_reply_is_not_crossed() -> None:
    # As the batch rule: a caller that hung up was delivered a prefix of its reply, and
    # a prefix can be another prompt's whole (shorter) reply.
    rules = LiveRules(window_s=600)
    own = {**_work("wb", "b", "Q", "LONGER", 0), "outcome": "cancelled"}
    rules.feed(_rows(_work("w1", "x", "P", "SHORT", 0), own))
    cut_short = {**_end("b", "2", S, fp_in="Q", fp_out="SHORT"), "outcome": "cancelled"}
    assert rules.feed(_rows(cut_short)) == []
    assert rules.finish() == []


def test_state_is_bounded_by_the_window_and_open_requests_are_counted_not_reported() -> None:
    rules = LiveRules(window_s=10)
    sizes = []
    for second in range(300):
        rows = []
        for k in range(50):
            span, t = f"s{second}-{k}", second * S + k * 1000
            rows.append(_front(span, f"r{second}-{k}", t))
            if k:  # one request a second never ends
                rows.append(_end(span, f"r{second}-{k}", t + S // 2, fp_in=span, fp_out=span))
        assert rules.feed(_rows(*rows)) == []
        sizes.append(rules.state.size())
    # 10 s of log time at 50 requests/s: about 500 spans, each with a cluster and a
    # caller waiting for the worker output it was delivered.
    assert max(sizes) <= 3 * 11 * 50, max(sizes)
    assert max(sizes[-100:]) <= max(sizes[50:150])  # flat, not growing with lines
    assert rules.state.open_at_edge >= 280
    assert rules.spans_seen == 300 * 50


def test_unlinked_events_reported_when_seen(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    log.write_text("")
    follower = Follower([str(tmp_path)], FollowSettings())
    try:
        follower.poll()
        ctx = {"request_id": "5", "trace_id": "t" * 32, "span_id": _span_id("f1")}
        log.write_text("\n".join([
            rt("request.start", time=ts(0), **ctx),
            rt("response.unlinked", time=ts(0.5), **ctx,
               error="Unlinked response; response task was dropped or cancelled"),
            rt("stream.foreign_chunk", time=ts(0.6), **{**ctx, "span_id": _span_id("f2"), "request_id": "6"},
               chunk_request_id="9"),
        ]) + "\n")
        found, _ = follower.poll()
    finally:
        follower.close()
    assert [(f["kind"], f["span_id"], f["evidence"][0]["line"]) for f in found] == [
        ("unlinked", _span_id("f1"), 2), ("unlinked", _span_id("f2"), 3)
    ]
    assert found[0]["detail"].startswith("Unlinked response")


def _worker(span: str, parent: str, rid: str, t0: int, **more: Any) -> dict[str, Any]:
    return {"span_id": span, "parent_span_id": parent, "request_id": rid, "t0": t0,
            "worker": True, **more}


def test_a_worker_read_before_its_caller_is_one_caller_with_it_and_none_other() -> None:
    rules = LiveRules(window_s=600)
    # The workers' file runs ahead: their spans are in before their callers'.
    assert rules.feed(_rows(_worker("w", "a", "7", 1, t1=2 * S, closing=True),
                            # v works for c, a request of its own trace.
                            _worker("v", "c", "8", 1, t1=2 * S, trace_id="tc"))) == []
    assert rules.feed(_rows(_front("a", "7", 0, t1=3 * S))) == []  # its own caller
    found = rules.feed(_rows(_front("d", "8", 1 * S)))  # not v's caller: a second one
    # v's caller c is in no line read, nor any frontend span of its trace: v stands for
    # it, as in the batch report.
    assert [(f["kind"], f["request_id"], f["span_id"]) for f in found] == [
        ("duplicate_in_flight", "8", "v")
    ]
    assert "spans v, d" in found[0]["detail"]
    found = rules.feed(_rows(_front("b", "7", 1 * S)))
    assert [(f["kind"], f["request_id"], f["span_id"]) for f in found] == [
        ("duplicate_in_flight", "7", "a")
    ]


def test_a_third_span_joining_a_caller_and_its_worker_in_one_batch_is_judged() -> None:
    rules = LiveRules(window_s=600)
    found = rules.feed(_rows(_front("a", "7", 0, t1=3 * S), _worker("w", "a", "7", 1),
                             _front("b", "7", 2 * S)))
    assert [(f["kind"], f["request_id"], f["span_id"]) for f in found] == [
        ("duplicate_in_flight", "7", "a")
    ]
    proof = [(e["line"]) for e in found[0]["evidence"]]
    # The two callers' lines, as the batch report cites them: the worker span (line 2)
    # works for a, whose own lines stand for it.
    assert proof == [1, 3]


def test_evicted_spans_are_freed_without_the_cycle_collector() -> None:
    rules = LiveRules(window_s=10)
    rules.feed(_rows(_front("a", "1", 0), _worker("w", "a", "1", 1, closing=True,
                                                  worker_end=True, outcome="ok",
                                                  fp_in="P", fp_out="O"),
                     _end("a", "1", S, fp_in="P", fp_out="O")))
    held = [weakref.ref(span) for span in rules.state.spans.values()]
    assert len(held) == 2
    gc.disable()
    try:
        rules.feed(_rows(_front("z", "9", 60 * S)))  # a and w fall out of the window
        assert [ref() for ref in held] == [None, None]
    finally:
        gc.enable()
    assert rules.state.size() == 2  # z and its id


def test_a_closed_follower_frees_its_window_without_the_cycle_collector(tmp_path: Path) -> None:
    # One request_id held by ten requests in turn: a cluster per request, each in a
    # cycle with its span, only one of them still the id's current cluster.
    lines = [line for k in range(10) for line in rt_request(f"s{k}", "7", 2 * k, 2 * k + 1)]
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True))
    follower.start()
    follower.poll()
    held = [weakref.ref(span) for span in follower.rules.state.spans.values()]
    assert len(held) == 10
    gc.disable()
    try:
        follower.close()
        assert [ref() for ref in held] == [None] * len(held)
    finally:
        gc.enable()


def test_a_nested_span_read_before_its_parent_is_the_same_request() -> None:
    # Dynamo's `generate` span inside `http-request`: when the request's first line is
    # torn, its span starts after `generate` and is read after it. The batch rule makes
    # `generate` work for its parent; live, it stayed a caller of its own, and the two
    # holding one request_id were reported as a duplicate in flight.
    rules = LiveRules(window_s=600)
    nested = _front("g", "7", 1 * S, parent_span_id="h")  # its one line: no end seen
    assert rules.feed(_rows(nested, _end("h", "7", 3 * S))) == []
    assert rules.callers_seen == 1
    rules = LiveRules(window_s=600)  # the same, the parent in a later poll
    assert rules.feed(_rows(nested)) == []
    assert rules.feed(_rows(_front("h", "7", 3 * S, t1=4 * S))) == []
    assert rules.callers_seen == 1
    assert rules.state.orphans == {}


def test_a_worker_read_before_its_caller_is_counted_once_and_awaited() -> None:
    # A worker file ahead of its caller's (a worker clock behind, or flushed first):
    # its caller was counted twice (batch `requests` counts it once), and the caller's
    # crossed-stream check did not wait for that worker, still open, to end.
    rules = LiveRules(window_s=600)
    rules.feed(_rows(_worker("w1", "a", "1", 0), _worker("w2", "a", "1", 1)))
    rules.feed(_rows(_front("a", "1", 2)))
    # Another prompt's worker produced the same text a was delivered ...
    rules.feed(_rows(_work("v", "b", "B", "OUT", 3)))
    assert rules.feed(_rows(_end("a", "1", 4 * S, fp_in="A", fp_out="OUT"))) == []
    rules.feed(_rows(_work("w1", "a", "A", "OTHER", 5 * S)))
    # ... and so did a's own worker, for a's prompt: its own output, never crossed.
    assert rules.feed(_rows(_work("w2", "a", "A", "OUT", 6 * S))) == []
    assert rules.callers_seen == 2  # a and b (whose worker alone is in)


def test_spans_waiting_for_their_parent_leave_with_the_window() -> None:
    rules = LiveRules(window_s=10)
    rules.feed(_rows(_worker("w", "gone", "1", 0, closing=True)))
    assert list(rules.state.orphans) == [("t", "gone")]
    rules.feed(_rows(_front("z", "9", 60 * S)))
    assert rules.state.orphans == {}


def test_zero_duration_request_starting_with_another_is_a_duplicate_in_any_order() -> None:
    # As the batch rule: a request that began and ended in the microsecond another one
    # began held the id while that one did. Whether it was reported went by which of
    # the two came first in the lines.
    zero = [_front("z", "7", 0), _end("z", "7", 0)]
    long_ = [_front("l", "7", 0)]
    for batches in ([long_, zero], [zero, long_], [zero + long_], [long_ + zero]):
        rules = LiveRules(window_s=600)
        found = [f for rows in batches for f in rules.feed(_rows(*rows))]
        found += rules.feed(_rows(_end("l", "7", S)))
        assert [(f["kind"], f["span_id"]) for f in found] == [("duplicate_in_flight", "l")]
    # Two that both began and ended in one microsecond are back to back, as in batch.
    rules = LiveRules(window_s=600)
    found = rules.feed(_rows(_front("a", "7", S), _end("a", "7", S)))
    found += rules.feed(_rows(_front("b", "7", S), _end("b", "7", S)))
    found += rules.feed(_rows(_front("c", "8", 3 * S), _end("c", "8", 3 * S)))
    assert found == []


def test_one_span_id_in_two_traces_is_two_callers() -> None:
    # Spans are keyed by (trace_id, span_id); callers were compared by span id alone, so
    # two requests that logged one span id in different traces were one caller and
    # their duplicate was never printed.
    rules = LiveRules(window_s=600)
    assert rules.feed(_rows(_front("s1", "7", 0, trace_id="ta"))) == []
    worker = {"span_id": "w2", "request_id": "7", "t0": S // 4, "parent_span_id": "s1",
              "worker": True, "trace_id": "tb"}
    found = rules.feed(_rows(worker, _front("s1", "7", S // 2, trace_id="tb")))
    assert [(f["kind"], f["request_id"], f["span_id"]) for f in found] == [
        ("duplicate_in_flight", "7", "s1")
    ]
    assert found[0]["detail"] == (
        "2 requests held request_id 7 at overlapping times (spans s1 (trace ta), s1 (trace tb))"
    )


def test_an_unlinked_line_is_cited_in_the_file_it_is_in() -> None:
    # The caller started before its log rotated; its Unlinked error is in the new file.
    rules = LiveRules(window_s=600)
    assert rules.feed(_rows(_front("a", "7", 0, file="f.jsonl.1", first_line=40))) == []
    batch = _rows(_front("a", "7", S, file="f.jsonl", first_line=3, last_line=3))
    batch.flags[0] = Flag("response.unlinked", "Unlinked response; x", None, 3)
    [found] = rules.feed(batch)
    assert found["evidence"] == [{"file": "f.jsonl", "line": 3}]


def test_a_legacy_caller_whose_worker_takes_the_id_after_the_holder_ended_is_a_duplicate() -> None:
    # Under --id-policy legacy a caller's request.start logs a minted id and its worker the
    # client's. Caller b started while a held "7", but b's worker took "7" only after a
    # ended: the callers overlap as their own spans do, so analyze reports a duplicate.
    # Live compared the worker span's start, opened a fresh cluster and never printed it
    # (seen in `ridtrace demo`'s legacy logs: 2 of 22 duplicates missing under --follow).
    rules = LiveRules(window_s=600)
    assert rules.feed(_rows(_front("a", "m-a", 0), _front("b", "m-b", 2 * S))) == []
    assert rules.feed(_rows(_worker("wa", "a", "7", 1 * S, closing=True))) == []
    assert rules.feed(_rows(_end("a", "7", 3 * S))) == []
    found = rules.feed(_rows(_worker("wb", "b", "7", 4 * S)))
    assert [(f["kind"], f["request_id"], f["span_id"]) for f in found] == [
        ("duplicate_in_flight", "7", "a")
    ]
    assert rules.feed(_rows(_end("b", "7", 6 * S))) == []


def test_a_crossed_streams_producer_without_a_client_id_is_written_without_one(
    tmp_path: Path,
) -> None:
    # "x_request_id None", the Python spelling of a caller that sent no client id, was
    # the detail of the finding, live and in the report alike.
    found, report = _followed_and_analyzed(tmp_path, *_two_callers(killed_worker=False))
    wanted = (f"caller span {_span_id('a')} (fp_in in-a) was delivered fp_out out-b, produced "
              f"by worker span {_span_id('wb')} for fp_in in-b (request_id 7)")
    assert [f["detail"] for f in found if f["kind"] == "crossed_stream"] == [wanted]
    assert [f["detail"] for f in report if f["kind"] == "crossed_stream"] == [wanted]


def test_a_caller_whose_own_work_was_not_read_is_not_crossed() -> None:
    # As the batch rule: its worker's log not followed, a caller's one-token reply equal
    # to another prompt's proves nothing; refused by its workers, its logs were read.
    for refused in (False, True):
        rules = LiveRules(window_s=600)
        rows = [_front("a", "1", 0), _front("b", "2", 0), _work("wa", "a", "A", "yes", S)]
        if refused:
            rows.append({**_work("wb", "b", "B", "", S), "outcome": "conflict"})
        rules.feed(_rows(*rows))
        found = [*rules.feed(_rows(_end("b", "2", 3 * S, fp_in="B", fp_out="yes"))),
                 *rules.finish()]
        assert [f["span_id"] for f in found if f["kind"] == "crossed_stream"] == (
            ["b"] if refused else []), refused


def test_a_caller_given_output_its_own_caller_never_got_is_crossed_live_too() -> None:
    # As the batch rule: B's own work never read, but the work it got was made for A,
    # which ended without it (the Unlinked 500): crossed, once A's end is in.
    # Not when A got it, nor when A holds no id of B's (B's own short reply equal to A's).
    for owner_got, a_id in ((None, "1"), ("yes", "1"), (None, "2")):
        rules = LiveRules(window_s=600)
        rules.feed(_rows(_front("a", a_id, 0), _front("b", "1", 0),
                         _work("wa", "a", "A", "yes", S)))
        found = rules.feed(_rows(_end("b", "1", 3 * S, fp_in="B", fp_out="yes")))
        ended = _end("a", a_id, 4 * S, fp_in="A", fp_out=owner_got)
        if owner_got is None:
            ended["outcome"] = "error"
        found += [*rules.feed(_rows(ended)), *rules.finish()]
        assert [f["span_id"] for f in found if f["kind"] == "crossed_stream"] == (
            ["b"] if (owner_got, a_id) == (None, "1") else []), (owner_got, a_id)
