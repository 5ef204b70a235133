"""Who received whose output: crossed streams and output that lost its caller.

Both rules compare fingerprints of content (docs/log-schema.md), never ids, so they
hold when ids collide — the case where ids cannot be trusted. Both join on integer
codes of whole columns (`rules.columns`), never look up one finding at a time.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ridtrace.forensics.rules.columns import (
    SpanColumns,
    isin,
    lookup,
    span_columns,
)
from ridtrace.forensics.rules.details import crossed_detail, foreign_chunk_detail
from ridtrace.forensics.rules.findings import (
    FindingColumns,
    concat,
    evidence,
    findings_frame,
    of_rows,
)
from ridtrace.forensics.rules.producers import reaching_producers


def _with_output(spans: SpanColumns) -> np.ndarray:
    return (spans.fp_in >= 0) & (spans.fp_out >= 0)


def _row_evidence(spans: SpanColumns, rows: np.ndarray) -> list[list[dict[str, object]]]:
    return evidence(spans.lines_at("first_line", rows), spans.lines_at("last_line", rows))


def _worker_read(spans: SpanColumns, rows: np.ndarray) -> np.ndarray:
    """Whether a worker span naming the caller of each of `rows` was read: one doing its
    work, or one refusing it (a Conflict), which shows its workers' logs were given. A
    caller every worker refused (a legacy frontend before upgraded workers) still gets
    the output of the caller its id was given to, and was let go as unjudged."""
    caller = spans.caller()
    read = lookup(spans.span_codes, caller[spans.worker])
    return np.asarray(read[np.maximum(caller[rows], 0)] & (caller[rows] >= 0))


def _astray(spans: SpanColumns, finished: np.ndarray, suspects: np.ndarray) -> np.ndarray:
    """Whether each of `suspects` holds the output of finished work whose caller, in the
    logs, did not end ``ok`` with it (an Unlinked 500, another reply) and shares its
    request id or client id: the legacy collision, one id handed two callers, whose
    output went to the other. Output alone matched any caller's equal short reply."""
    caller = spans.caller()
    codes = max(spans.span_codes, 1)
    # Each caller's row, and its delivered output, by span code (-1: none, or not ok).
    row_of = np.full(codes, -1, dtype=np.int64)
    delivered = np.full(codes, -1, dtype=np.int64)
    callers = np.flatnonzero(spans.front & (spans.span >= 0) & (caller == spans.span))
    row_of[spans.span[callers]] = callers
    delivered[spans.span[callers]] = np.where(spans.ok[callers], spans.fp_out[callers], -1)
    work = np.flatnonzero(finished & (caller >= 0))
    owner = row_of[caller[work]]
    lost = (owner >= 0) & (delivered[caller[work]] != spans.fp_out[work])
    work, owner = work[lost], owner[lost]
    width = np.int64(max(spans.fp_codes, 1))
    found = np.zeros(len(suspects), dtype=bool)
    for ids in (spans.request_id, spans.x_request_id):
        named = ids[owner] >= 0
        pairs = ids[owner[named]] * width + spans.fp_out[work[named]]
        mine = ids[suspects] * width + spans.fp_out[suspects]
        found |= (ids[suspects] >= 0) & isin(mine, pairs)
    return found


def find_crossed_stream(spans: SpanColumns) -> FindingColumns:
    """`crossed_stream` on converted columns."""
    works = spans.worker & _with_output(spans)
    # Only *finished* output identifies its producer: the first tokens of different
    # replies can be equal, so partial output of a cancelled or failed stream is no proof,
    # on either side (a caller that hung up holds a prefix, which can be another
    # prompt's whole, shorter reply).
    front = spans.front & _with_output(spans) & spans.ok
    finished = works & spans.ok
    empty = np.zeros(0, dtype=np.int64)
    if not finished.any() or not front.any():
        return of_rows("crossed_stream", spans, empty, empty, [], [])
    # Cheap first: only outputs some worker produced can be someone else's.
    front &= isin(spans.fp_out, spans.fp_out[finished])
    width = np.int64(max(spans.fp_codes, 1))
    pair = spans.fp_in * width + spans.fp_out
    # pandas hashes int64 (numpy's isin sorts or builds a table of the whole range).
    own = pd.Series(pair[front]).isin(pair[works]).to_numpy()
    suspects = np.flatnonzero(front)[~own]
    if len(suspects):
        # Only a caller some worker span of which was read can be shown to hold
        # another's: with its worker's log missing, its own reply, equal to another
        # prompt's (a one-token "Yes"), matched no work of its own and was called crossed.
        # Unless that output never reached the caller it was made for, one holding the
        # same id: then it went astray, to this one (a legacy victim whose own work never
        # began: its worker hung before a line, and it was let go as unjudged).
        suspects = suspects[_worker_read(spans, suspects) | _astray(spans, finished, suspects)]
    if not len(suspects):
        return of_rows("crossed_stream", spans, empty, empty, [], [])
    made = np.flatnonzero(finished & isin(spans.fp_out, spans.fp_out[suspects]))
    w = made[reaching_producers(spans.fp_out[made], spans.start[made],
                                spans.texts("span_id", made), spans.fp_out[suspects],
                                spans.end[suspects])]
    text = {col: spans.texts(col, suspects) for col in ("span_id", "fp_in", "fp_out")}
    w_text = {col: spans.texts(col, w) for col in ("span_id", "fp_in", "request_id",
                                                   "x_request_id")}
    details = [
        crossed_detail(span, fp_in, fp_out, w_span, w_in, w_rid, w_xrid)
        for span, fp_in, fp_out, w_span, w_in, w_rid, w_xrid in zip(
            text["span_id"], text["fp_in"], text["fp_out"], w_text["span_id"],
            w_text["fp_in"], w_text["request_id"], w_text["x_request_id"], strict=True,
        )
    ]
    proof = [
        mine + theirs
        for mine, theirs in zip(_row_evidence(spans, suspects), _row_evidence(spans, w),
                                strict=True)
    ]
    return of_rows("crossed_stream", spans, suspects, spans.end[suspects], details, proof)


def crossed_stream(requests: pd.DataFrame) -> pd.DataFrame:
    """Callers delivered output that a worker produced for a different input.

    A caller whose (fp_in, fp_out) pair matches some worker's own work got its own
    output, even if another prompt happened to produce the same text; identical
    prompts have identical fp_in and are never flagged.
    """
    return findings_frame(find_crossed_stream(span_columns(requests)))


# How long before its failed caller's end line a worker's output may have finished and
# still be the race of the frontend's timeout, in µs (`_lost_output`).
TIMEOUT_RACE_US = 25_000


def _lost_output(spans: SpanColumns) -> np.ndarray:
    """Rows of finished worker output that no frontend caller was delivered.

    Only judged where the frontend's logs for the trace are present (a worker log on
    its own proves nothing), and not when the caller itself went away or its end is not
    in the logs: a caller still streaming when the logs were read (its worker done, its
    request.end not written yet) has not been delivered its output *yet*. Nor when the
    output was finished after its caller had already ended in error with no Unlinked
    error or foreign chunk of its own: the frontend gave up on that worker (a timeout),
    which finished before it saw the hang-up, the race of any timeout; such a caller was
    told it failed, not left for another's output. Nor, whenever it finished, when such
    a caller was delivered part of a reply (an `fp_out` of its own): the frontend cut it
    short (a client that stopped reading, let go at its total timeout or at shutdown),
    having received it; output that went to another caller shows on that caller, whose
    `fp_out` then matches no work of its own. "After" with `TIMEOUT_RACE_US` of leeway:
    the frontend writes its caller's end line a moment after its timeout fired (the
    answer, then the line), and a worker finishing in that moment was a false error on
    a safe stack (3-7 a run of 600 calls at `--total-timeout 0.35`, each within 4 ms).
    (Output a caller with an Unlinked error lost still joins that finding.)
    """
    front = spans.front
    works = spans.worker & _with_output(spans) & spans.ok
    delivered = spans.fp_out[front]
    works &= ~isin(spans.fp_out, delivered[delivered >= 0])
    works &= ~isin(spans.parent, spans.span[front & (spans.cancelled | ~spans.ended)])
    gave_up = np.flatnonzero(front & spans.failed & (spans.span >= 0)
                             & ~_valid(spans, "unlinked") & ~_valid(spans, "foreign"))
    given_up_at = np.full(max(spans.span_codes, 1), np.iinfo(np.int64).max, dtype=np.int64)
    cut_short = spans.fp_out[gave_up] >= 0
    given_up_at[spans.span[gave_up]] = np.where(cut_short, np.iinfo(np.int64).min,
                                                spans.end[gave_up] - TIMEOUT_RACE_US)
    works &= ~((spans.parent >= 0) & (spans.end > given_up_at[np.maximum(spans.parent, 0)]))
    rows = np.flatnonzero(works)
    return np.asarray(rows[spans.trace_in_front(rows)])


def find_unlinked(spans: SpanColumns) -> FindingColumns:
    """`unlinked` on converted columns."""
    flagged = np.flatnonzero(_valid(spans, "unlinked") | _valid(spans, "foreign"))
    error_text = spans.texts("unlinked", flagged)
    details = [
        text if text is not None else foreign_chunk_detail(foreign)
        for text, foreign in zip(error_text, spans.texts("foreign", flagged), strict=True)
    ]
    line = spans.lines_at("unlinked_line", flagged).or_else(
        spans.lines_at("foreign_line", flagged))
    proof = evidence(line, spans.lines_at("last_line", flagged))
    lost = _lost_output(spans)
    # The same incident seen from the worker's side joins its caller's finding (the
    # last flagged row of that span, as a dict keyed by span would keep).
    at_span = np.full(max(spans.span_codes, 1), -1, dtype=np.int64)
    known = spans.span[flagged] >= 0
    at_span[spans.span[flagged][known]] = np.flatnonzero(known)
    parent = spans.parent[lost]
    at = np.where(parent >= 0, at_span[np.maximum(parent, 0)], -1)
    lost_items = _row_evidence(spans, lost)
    lost_span = spans.texts("span_id", lost)
    lost_out = spans.texts("fp_out", lost)
    for i in np.flatnonzero(at >= 0).tolist():
        target = int(at[i])
        proof[target] = proof[target] + lost_items[i]
        details[target] += f"; worker span {lost_span[i]} produced fp_out {lost_out[i]} for it"
    alone = np.flatnonzero(at < 0)
    lost_in = spans.texts("fp_in", lost[alone])
    extra = of_rows(
        "unlinked", spans, lost[alone], spans.end[lost[alone]],
        [f"worker span {lost_span[i]} produced fp_out {lost_out[i]} (fp_in {fp_in}) that no "
         "caller received" for i, fp_in in zip(alone.tolist(), lost_in, strict=True)],
        [lost_items[i] for i in alone.tolist()],
    )
    own = of_rows("unlinked", spans, flagged, spans.start[flagged], details, proof)
    return concat([own, extra])


def _valid(spans: SpanColumns, column: str) -> np.ndarray:
    return np.asarray(spans.text[column].is_valid().to_numpy(zero_copy_only=False))


def unlinked(requests: pd.DataFrame) -> pd.DataFrame:
    """Responses that lost their caller: Unlinked errors, foreign chunks, lost output."""
    return findings_frame(find_unlinked(span_columns(requests)))

