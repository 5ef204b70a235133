"""Each rule on small hand-made request frames, with its near misses."""

from __future__ import annotations

from ridtrace.forensics.rules.deprecated import deprecated_header
from ridtrace.forensics.rules.overlap import client_id_reuse, duplicate_in_flight
from ridtrace.forensics.rules.streams import crossed_stream, unlinked
from tests.forensics.helpers import requests_frame


def test_duplicate_in_flight_overlapping_same_request_id() -> None:
    reqs = requests_frame(
        {"request_id": "1", "start": 0.0, "end": 2.0},
        {"request_id": "1", "start": 1.0, "end": 3.0},
        {"request_id": "2", "start": 1.0, "end": 3.0},
    )
    found = duplicate_in_flight(reqs)
    assert list(found["request_id"]) == ["1"]
    assert found.loc[0, "severity"] == "error"
    assert {e["line"] for e in found.loc[0, "evidence"]} == {1, 2, 11, 12}


def test_sequential_reuse_is_not_a_duplicate() -> None:
    reqs = requests_frame(
        {"request_id": "1", "start": 0.0, "end": 1.0},
        {"request_id": "1", "start": 1.0, "end": 2.0},  # starts exactly when the first ended
        {"request_id": "1", "start": 5.0, "end": 6.0},
    )
    assert duplicate_in_flight(reqs).empty


def test_zero_duration_request_inside_another_is_a_duplicate_in_any_line_order() -> None:
    # Both start at the same microsecond; the zero-duration one held the id while the
    # other did. The verdict was the order of the lines: a duplicate when the longer
    # request came first in the frame, none when the zero-duration one did.
    long_ = {"request_id": "1", "x_request_id": "c", "span_id": "long", "start": 0.0, "end": 1.0}
    zero = {"request_id": "1", "x_request_id": "c", "span_id": "zero", "start": 0.0, "end": 0.0}
    for rows in ((long_, zero), (zero, long_)):
        found = duplicate_in_flight(requests_frame(*rows))
        assert list(found["request_id"]) == ["1"], rows
        assert found.loc[0, "span_id"] == "long"
    for rows in ((long_, zero), (zero, long_)):
        reuse = [dict(r, request_id=r["span_id"]) for r in rows]
        assert list(client_id_reuse(requests_frame(*reuse))["x_request_id"]) == ["c"], rows


def test_two_zero_duration_requests_at_one_microsecond_are_back_to_back() -> None:
    reqs = requests_frame(
        {"request_id": "1", "span_id": "a", "start": 0.5, "end": 0.5},
        {"request_id": "1", "span_id": "b", "start": 0.5, "end": 0.5},
    )
    assert duplicate_in_flight(reqs).empty


def test_duplicate_chain_is_one_finding() -> None:
    reqs = requests_frame(
        {"request_id": "1", "start": 0.0, "end": 2.0},
        {"request_id": "1", "start": 1.0, "end": 4.0},
        {"request_id": "1", "start": 3.0, "end": 5.0},
    )
    found = duplicate_in_flight(reqs)
    assert len(found) == 1
    assert "3 requests" in found.loc[0, "detail"]


def test_duplicate_counts_callers_not_spans() -> None:
    # Dynamo: the losing caller's `generate` span (the Unlinked error) is nested in its
    # `http-request` span. Two callers held the id; the detail said "3 requests".
    reqs = requests_frame(
        {"request_id": "r", "span_id": "f1", "start": 0.0, "end": 2.0},
        {"request_id": "r", "span_id": "f2", "trace_id": "t2", "start": 0.5, "end": 0.7},
        {"request_id": "r", "span_id": "g2", "trace_id": "t2", "parent_span_id": "f2",
         "start": 0.6, "end": 0.6},
    )
    found = duplicate_in_flight(reqs)
    assert len(found) == 1
    assert found.loc[0, "detail"] == (
        "2 requests held request_id r at overlapping times (spans f1, f2)"
    )
    assert len(found.loc[0, "evidence"]) == 6  # the nested span's line is still cited


def test_worker_spans_of_one_caller_are_not_duplicates() -> None:
    # A frontend request and its worker span share request_id and overlap by design.
    reqs = requests_frame(
        {"request_id": "1", "span_id": "f", "trace_id": "t", "start": 0.0, "end": 2.0},
        {"request_id": "1", "span_id": "w", "trace_id": "t", "parent_span_id": "f",
         "side": "worker", "start": 0.1, "end": 1.9},
    )
    assert duplicate_in_flight(reqs).empty


def test_duplicate_seen_only_in_worker_logs() -> None:
    reqs = requests_frame(
        {"request_id": "1", "span_id": "w1", "parent_span_id": "fa", "side": "worker",
         "start": 0.0, "end": 2.0},
        {"request_id": "1", "span_id": "w2", "parent_span_id": "fb", "side": "worker",
         "start": 1.0, "end": 2.5},
        # a retry of the same caller on another worker is not a duplicate
        {"request_id": "2", "span_id": "w3", "parent_span_id": "fc", "side": "worker",
         "start": 0.0, "end": 2.0},
        {"request_id": "2", "span_id": "w4", "parent_span_id": "fc", "side": "worker",
         "start": 0.5, "end": 2.0},
    )
    assert list(duplicate_in_flight(reqs)["request_id"]) == ["1"]


def test_client_id_reuse_needs_overlap_and_distinct_request_ids() -> None:
    reqs = requests_frame(
        {"request_id": "a", "x_request_id": "c1", "start": 0.0, "end": 2.0},
        {"request_id": "b", "x_request_id": "c1", "start": 1.0, "end": 3.0},
        {"request_id": "c", "x_request_id": "c2", "start": 0.0, "end": 1.0},
        {"request_id": "d", "x_request_id": "c2", "start": 2.0, "end": 3.0},  # sequential
        {"request_id": "e", "x_request_id": "c3", "start": 0.0, "end": 2.0},
        {"request_id": "e", "x_request_id": "c3", "start": 1.0, "end": 3.0},  # same rid: a dup
    )
    found = client_id_reuse(reqs)
    assert list(found["x_request_id"]) == ["c1"]
    assert set(found["severity"]) == {"info"}


def _work(span: str, parent: str, fp_in: str, fp_out: str | None, **kw: object) -> dict[str, object]:
    row: dict[str, object] = {"span_id": span, "parent_span_id": parent, "side": "worker",
                              "fp_in": fp_in, "fp_out": fp_out, "outcome": "ok",
                              "trace_id": f"t-{parent}"}
    row.update(kw)
    return row


def _caller(span: str, fp_in: str, fp_out: str | None, **kw: object) -> dict[str, object]:
    row: dict[str, object] = {"span_id": span, "fp_in": fp_in, "fp_out": fp_out,
                              "outcome": "ok", "trace_id": f"t-{span}", "request_id": f"r-{span}"}
    row.update(kw)
    return row


def test_crossed_stream_found_even_when_ids_collide() -> None:
    reqs = requests_frame(
        _caller("A", "inA", None, request_id="1", outcome="error"),
        _caller("B", "inB", "outA", request_id="1"),
        _work("wA", "A", "inA", "outA", request_id="1"),
        _work("wB", "B", "inB", "outB", request_id="1"),
    )
    found = crossed_stream(reqs)
    assert list(found["span_id"]) == ["B"]
    assert "wA" in found.loc[0, "detail"]


def test_identical_prompts_are_not_crossed() -> None:
    reqs = requests_frame(
        _caller("A", "same", "out"), _caller("B", "same", "out"),
        _work("wA", "A", "same", "out"), _work("wB", "B", "same", "out"),
    )
    assert crossed_stream(reqs).empty


def test_cancelled_caller_without_output_is_not_crossed() -> None:
    reqs = requests_frame(
        _caller("A", "inA", None, outcome="cancelled"),
        _work("wA", "A", "inA", None, outcome="cancelled"),
        _caller("B", "inB", "outB"), _work("wB", "B", "inB", "outB"),
    )
    assert crossed_stream(reqs).empty
    assert unlinked(reqs).empty


def test_cancelled_partial_outputs_sharing_a_prefix_are_not_crossed() -> None:
    # Two callers hung up after the same first tokens ("echo: user:"): equal partial
    # output is a shared prefix, not proof that either got the other's stream.
    reqs = requests_frame(
        _caller("A", "inA", "prefix", outcome="cancelled"),
        _work("wA", "A", "inA", "prefix", outcome="cancelled"),
        _caller("B", "inB", "prefix", outcome="cancelled"),
        _work("wB", "B", "inB", "prefix", outcome="cancelled"),
        _caller("C", "inC", "prefix", outcome="cancelled"),
    )
    assert crossed_stream(reqs).empty


def test_a_cut_short_callers_prefix_equal_to_a_shorter_finished_reply_is_not_crossed() -> None:
    # A hung up after "echo: user: a" of its longer reply; another caller's whole reply
    # was "echo: user: a". A cut-short stream delivers a prefix, no proof of whose it was.
    for outcome in ("cancelled", "error"):
        reqs = requests_frame(
            _caller("A", "inA", "short", outcome=outcome),
            _work("wA", "A", "inA", "longer", outcome="cancelled"),
            _caller("B", "inB", "short"), _work("wB", "B", "inB", "short"),
        )
        assert crossed_stream(reqs).empty, outcome


def test_same_output_for_different_prompts_is_not_crossed_when_own_work_matches() -> None:
    reqs = requests_frame(
        _caller("A", "inA", "yes"), _caller("B", "inB", "yes"),
        _work("wA", "A", "inA", "yes"), _work("wB", "B", "inB", "yes"),
    )
    assert crossed_stream(reqs).empty


def test_a_caller_whose_own_work_was_not_read_is_not_crossed() -> None:
    # Two short replies equal ("Yes"), the second caller's worker log not given: its
    # output matches no work of its own in the logs, which proves nothing.
    reqs = requests_frame(
        _caller("A", "inA", "yes"), _work("wA", "A", "inA", "yes"), _caller("B", "inB", "yes"),
    )
    assert crossed_stream(reqs).empty
    # Its own work read, or its workers' refusals (every worker refused it: the legacy
    # registry handed it the output of the caller its id went to), and another's
    # output delivered: crossed.
    for own in (_work("wB", "B", "inB", "no"), _work("wB", "B", "inB", None, outcome="conflict")):
        reqs = requests_frame(
            _caller("A", "inA", "yes"), _work("wA", "A", "inA", "yes"), _caller("B", "inB", "yes"),
            own,
        )
        assert list(crossed_stream(reqs)["span_id"]) == ["B"], own


def test_a_caller_given_output_its_own_caller_never_got_is_crossed_unread_work_or_not() -> None:
    # The legacy failure with the victim's worker hung before its first line: A's output
    # went to B (A got the Unlinked 500), and B, no work of its own in the logs, was let
    # go as unjudged (load-faults pass). Output that never reached the caller it was made
    # for went astray; B's reply is that output.
    for shared in ({"request_id": "dup"}, {"x_request_id": "dup"}):
        reqs = requests_frame(
            _caller("A", "inA", None, outcome="error", **shared),
            _work("wA", "A", "inA", "yes"), _caller("B", "inB", "yes", **shared),
        )
        assert list(crossed_stream(reqs)["span_id"]) == ["B"], shared
    # Its own caller got it, or its caller is not in the logs, or holds no id of B's (B's
    # worker log left out, its own short reply equal to A's): proves nothing of B's.
    for owner in ([_caller("A", "inA", "yes", request_id="dup")], [],
                  [_caller("A", "inA", None, outcome="error")]):
        reqs = requests_frame(*owner, _work("wA", "A", "inA", "yes"),
                              _caller("B", "inB", "yes", request_id="dup"))
        assert crossed_stream(reqs).empty, owner


def test_unlinked_error_lines_and_foreign_chunks() -> None:
    reqs = requests_frame(
        {"span_id": "A", "unlinked": "Unlinked response; response task was dropped or cancelled",
         "unlinked_line": 7},
        {"span_id": "B", "foreign": "other-rid", "foreign_line": 20},
        {"span_id": "C"},
    )
    found = unlinked(reqs)
    assert sorted(found["span_id"]) == ["A", "B"]
    a = found[found["span_id"] == "A"].iloc[0]
    assert a["evidence"][0] == {"file": "f.jsonl", "line": 7}
    assert "other-rid" in found[found["span_id"] == "B"].iloc[0]["detail"]


def test_unlinked_worker_output_no_caller_received() -> None:
    reqs = requests_frame(
        _caller("A", "inA", "outA"), _work("wA", "A", "inA", "outA"),
        _caller("B", "inB", "outA"), _work("wB", "B", "inB", "outB"),  # B got A's output
    )
    assert list(unlinked(reqs)["span_id"]) == ["wB"]


def test_lost_output_merges_into_the_callers_unlinked_error() -> None:
    reqs = requests_frame(
        _caller("A", "inA", None, outcome="error", unlinked="Unlinked request; x",
                unlinked_line=5),
        _work("wA", "A", "inA", "outA"),
    )
    found = unlinked(reqs)
    assert list(found["span_id"]) == ["A"]
    # the Unlinked line, the caller's last line, the worker span's first and last lines
    assert [e["line"] for e in found.loc[0, "evidence"]] == [5, 2, 11, 12]


def test_lost_output_needs_frontend_logs_and_a_caller_that_stayed() -> None:
    only_workers = requests_frame(_work("wA", "A", "inA", "outA"))
    assert unlinked(only_workers).empty
    caller_left = requests_frame(
        _caller("A", "inA", "partial", outcome="cancelled"), _work("wA", "A", "inA", "outA"),
    )
    assert unlinked(caller_left).empty


def test_deprecated_header_per_request() -> None:
    # A worker's span counts only as its own request (called directly, no caller): the
    # work of a frontend request is that request's.
    reqs = requests_frame(
        {"span_id": "A", "trace_id": "t1", "deprecated": "x-dynamo-request-id",
         "deprecated_line": 3},
        {"span_id": "B"},
        {"span_id": "W", "trace_id": "t1", "side": "worker", "parent_span_id": "A",
         "deprecated": "request-id"},
        {"span_id": "D", "side": "worker", "deprecated": "request-id"},
        # called with a traceparent whose span is in no log given: its own request too
        {"span_id": "T", "side": "worker", "parent_span_id": "X", "deprecated": "request-id"},
    )
    found = deprecated_header(reqs)
    assert list(found["span_id"]) == ["A", "D", "T"]
    assert found.loc[0, "evidence"] == [{"file": "f.jsonl", "line": 3}]
    assert found.loc[0, "severity"] == "info"


def test_one_span_id_in_two_traces_is_two_requests() -> None:
    # Requests are keyed by (trace_id, span_id). On span ids alone the two callers
    # below were one: their duplicate went unreported (a clean bill of health).
    reqs = requests_frame(
        {"request_id": "7", "span_id": "s1", "trace_id": "ta", "start": 0.0, "end": 1.0},
        {"request_id": "7", "span_id": "s1", "trace_id": "tb", "start": 0.5, "end": 1.5},
    )
    found = duplicate_in_flight(reqs)
    assert list(found["request_id"]) == ["7"]
    assert found.loc[0, "detail"] == (
        "2 requests held request_id 7 at overlapping times (spans s1 (trace ta), s1 (trace tb))"
    )


def test_a_worker_works_for_the_caller_of_its_own_trace() -> None:
    # The caller s1 of trace ta went away; the caller s1 of trace tb did not, and its
    # worker's output never reached it. Taken by span id, tb's worker worked for the
    # caller that left, and the lost output was excused.
    reqs = requests_frame(
        _caller("s1", "inA", None, outcome="cancelled", trace_id="ta"),
        _caller("s1", "inB", "outX", trace_id="tb"),
        _work("wB", "s1", "inB", "outB", trace_id="tb"),
    )
    assert list(unlinked(reqs)["span_id"]) == ["wB"]


def test_output_is_not_lost_while_its_caller_has_not_ended() -> None:
    # Logs read while the service runs: the worker is done, the caller is still sending
    # the last of its stream (no request.end yet). Its output was reported as no
    # caller's, an error finding for a request that was fine.
    streaming = requests_frame(_caller("A", "inA", None, outcome=None),
                               _work("wA", "A", "inA", "outA"))
    assert unlinked(streaming).empty
    ended = requests_frame(_caller("A", "inA", None, outcome="error", end=0.9),
                           _work("wA", "A", "inA", "outA", end=0.5))
    assert list(unlinked(ended)["span_id"]) == ["wA"]


def test_a_worker_whose_parent_id_is_another_traces_span_is_not_that_ones() -> None:
    # Trace tb's caller is not in the logs; its worker's parent id happens to be the span
    # id of trace ta's caller. Taken by span id it worked for ta's caller: one caller,
    # no duplicate (where --follow, keying spans by trace, reported one).
    reqs = requests_frame(
        {"request_id": "8", "span_id": "s3", "trace_id": "ta", "start": 2.0, "end": 4.0},
        {"request_id": "8", "span_id": "w2", "trace_id": "tb", "parent_span_id": "s3",
         "side": "worker", "start": 2.2, "end": 3.8},
    )
    found = duplicate_in_flight(reqs)
    assert list(found["request_id"]) == ["8"]
    assert found.loc[0, "detail"].endswith("(spans s3, w2)")


def test_only_a_finding_whose_span_ids_repeat_names_their_traces() -> None:
    reqs = requests_frame(
        {"request_id": "7", "span_id": "s1", "trace_id": "ta", "start": 0.0, "end": 1.0},
        {"request_id": "7", "span_id": "s1", "trace_id": "tb", "start": 0.5, "end": 1.5},
        {"request_id": "8", "span_id": "s2", "trace_id": "tc", "start": 0.0, "end": 1.0},
        {"request_id": "8", "span_id": "s3", "trace_id": "td", "start": 0.5, "end": 1.5},
    )
    details = sorted(duplicate_in_flight(reqs)["detail"])
    assert details[0].endswith("(spans s1 (trace ta), s1 (trace tb))")
    assert details[1].endswith("(spans s2, s3)")


def test_output_finished_after_its_caller_gave_up_is_not_lost() -> None:
    # A safe stack's timeout: the frontend answered 504 at 0.5 s, its worker, not yet
    # aware of the hang-up, finished its reply at 0.8 s. That output was reported as no
    # caller's (unlinked, exit 1), an incident for the race of any timeout.
    timed_out = requests_frame(_caller("A", "inA", None, outcome="error", end=0.5),
                               _work("wA", "A", "inA", "outA", end=0.8))
    assert unlinked(timed_out).empty
    # Finished a moment before its caller's end line, which the frontend writes after
    # its timeout fired and its answer went: the same race, a false error on a safe
    # stack (3-7 a run of 600 calls at --total-timeout 0.35 s, each within 4 ms).
    late_line = requests_frame(_caller("A", "inA", None, outcome="error", end=0.504),
                               _work("wA", "A", "inA", "outA", end=0.5))
    assert unlinked(late_line).empty
    # Finished while its caller still waited, long before it ended, yet never delivered.
    dropped = requests_frame(_caller("A", "inA", None, outcome="error", end=0.9),
                             _work("wA", "A", "inA", "outA", end=0.8))
    assert list(unlinked(dropped)["span_id"]) == ["wA"]
    # Delivered part of it, then let go (a client that stopped reading, cut at the total
    # timeout or at shutdown): the frontend had its worker's whole reply, no caller lost it.
    stalled = requests_frame(_caller("A", "inA", "outA-part", outcome="error", end=0.9),
                             _work("wA", "A", "inA", "outA", end=0.8))
    assert unlinked(stalled).empty
    # A caller with an Unlinked error of its own keeps its worker's output as evidence.
    displaced = requests_frame(
        _caller("A", "inA", None, outcome="error", end=0.5, unlinked="Unlinked request; x",
                unlinked_line=5),
        _work("wA", "A", "inA", "outA", end=0.8))
    found = unlinked(displaced)
    assert list(found["span_id"]) == ["A"]
    assert "worker span wA produced fp_out outA" in found.loc[0, "detail"]
