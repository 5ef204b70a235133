"""Findings about ids held at overlapping times: duplicate in flight and client id reuse
(the info finding for deprecated id headers is in `rules.deprecated`).

Each rule is a pure function, requests DataFrame in, findings DataFrame out; the
``find_*`` forms work on `SpanColumns` (integer codes) and return `FindingColumns`, so
`rules.report` converts the frame once for every rule. Their cost follows the number
of requests, not of findings.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ridtrace.contract import FRONTEND, WORKER
from ridtrace.forensics.rules import CALLER_JUMP_ROUNDS
from ridtrace.forensics.rules.codes import ranked, shared_codes
from ridtrace.forensics.rules.columns import SpanColumns, span_columns
from ridtrace.forensics.rules.findings import (
    FindingColumns,
    evidence,
    findings_frame,
    of_rows,
)


def caller_of(requests: pd.DataFrame) -> pd.Series:
    """The span id of the caller each span works for (column ``caller`` when present).

    A worker span works for its parent; so does a frontend span nested in another
    frontend span (Dynamo's ``generate`` inside ``http-request``). Any other span is
    its own caller.
    """
    if "caller" in requests.columns:
        return requests["caller"]
    span = pa.array(requests["span_id"], type=pa.string())
    parent = pa.array(requests["parent_span_id"], type=pa.string())
    side = requests["side"].to_numpy()
    front = side == FRONTEND
    fronts = span.filter(pa.array(front))
    nested = front & pc.fill_null(pc.is_in(parent, value_set=fronts), False).to_numpy(
        zero_copy_only=False
    )
    up = ((side == WORKER) | nested) & pc.is_valid(parent).to_numpy(zero_copy_only=False)
    caller = pc.if_else(pa.array(up), parent, span)
    # A span working for a span that works for another works for that one's caller,
    # climbed by pointer jumping as `SpanColumns.caller` climbs: `top` is where each
    # worker span's climb has reached, and each round moves it on by another's climb.
    mask = pa.array(up)
    ups, top = span.filter(mask), caller.filter(mask)
    for _ in range(CALLER_JUMP_ROUNDS):
        above = pc.take(top, pc.index_in(top, value_set=ups))
        climb = pc.fill_null(pc.and_(pc.is_valid(above), pc.not_equal(above, top)), False)
        if not pc.any(climb).as_py():
            break
        top = pc.if_else(climb, above, top)
    above = pc.take(top, pc.index_in(caller, value_set=ups))
    caller = pc.if_else(pc.is_valid(above), above, caller)
    out: pd.Series = pd.Series(caller, index=requests.index, dtype=pd.ArrowDtype(pa.string()))
    return out


def _clusters(
    spans: SpanColumns, key_column: str, rows: np.ndarray, *, keys_in_text_order: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Rows of `rows` in clusters of overlapping spans sharing `key_column`, and cluster numbers.

    Sorted by key, then start, a row opens a new cluster when it starts at or after the
    latest end seen so far under its key: back-to-back reuse is not an overlap. Rows that
    start at the same microsecond go longest first, so a zero-duration request inside
    another's span overlaps it whatever order the lines came in. Only clusters of two
    rows or more are returned.
    """
    key: np.ndarray = getattr(spans, key_column)
    k = key[rows]
    counts = np.bincount(k[k >= 0]) if (k >= 0).any() else np.zeros(1, dtype=np.int64)
    rows = rows[(k >= 0) & (counts[np.maximum(k, 0)] > 1)]
    if not len(rows):
        return rows, rows
    # Keys in text order number the findings as they are reported; a count needs none.
    k = ranked(key[rows], spans.dictionary[key_column]) if keys_in_text_order else key[rows]
    order = np.lexsort((-spans.end[rows], spans.start[rows], k))
    rows, k = rows[order], k[order]
    start, end = spans.start[rows], spans.end[rows]
    group_start = np.r_[True, k[1:] != k[:-1]]
    latest_end = pd.Series(end).groupby(np.cumsum(group_start)).cummax().to_numpy()
    new = group_start.copy()
    new[1:] |= start[1:] >= latest_end[:-1]
    cluster = np.cumsum(new)
    size = np.bincount(cluster)
    keep = size[cluster] > 1
    return rows[keep], cluster[keep]


def _shared_clusters(
    spans: SpanColumns, key_column: str, rows: np.ndarray, distinct: np.ndarray,
    *, keys_in_text_order: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """`_clusters` holding at least two distinct `distinct` codes (two callers, say)."""
    rows, cluster = _clusters(spans, key_column, rows, keys_in_text_order=keys_in_text_order)
    if len(rows):
        ident = distinct[rows]
        known = ident >= 0
        width = int(ident.max()) + 1
        pairs = np.unique(cluster[known] * width + ident[known])
        many = np.bincount(pairs // width, minlength=int(cluster.max()) + 1) >= 2
        rows, cluster = rows[many[cluster]], cluster[many[cluster]]
    return rows, cluster


def _cluster_findings(
    kind: str, spans: SpanColumns, rows: np.ndarray, distinct: np.ndarray,
    *, key_column: str, what: str,
) -> FindingColumns:
    """One finding per cluster holding at least two distinct `distinct` codes."""
    rows, cluster = _shared_clusters(spans, key_column, rows, distinct)
    if not len(rows):
        return of_rows(kind, spans, rows, rows, [], [])
    starts = np.flatnonzero(np.r_[True, cluster[1:] != cluster[:-1]])
    ends = np.r_[starts[1:], len(rows)]
    items = evidence(spans.lines_at("first_line", rows), spans.lines_at("last_line", rows))
    names = [str(s) for s in spans.texts("span_id", rows)]
    # One span id in several traces names several requests: say which is which.
    traces = spans.texts("trace_id", rows) if len(set(names)) < len(names) else []
    # A request is its caller: Dynamo's `generate` span inside its `http-request` span
    # (or a caller's retries) adds evidence lines, not a request to the count.
    callers = spans.caller()[rows].tolist()
    key_text = spans.texts(key_column, rows[starts])
    details, proof = [], []
    for lo, hi, held in zip(starts.tolist(), ends.tolist(), key_text, strict=True):
        seen: set[int] = set()
        shown = []
        for i in range(lo, hi):
            if callers[i] not in seen:
                seen.add(callers[i])
                shown.append(i)
        labels = [names[i] for i in shown]
        if len(set(labels)) < len(labels):
            labels = [f"{names[i]} (trace {traces[i]})" for i in shown]
        details.append(
            f"{len(shown)} requests held {what} {held} at overlapping times "
            f"(spans {', '.join(labels)})"
        )
        proof.append([item for per_row in items[lo:hi] for item in per_row])
    first = rows[starts]
    return of_rows(kind, spans, first, spans.start[first], details, proof)


def _id_holders(spans: SpanColumns, among: np.ndarray | None = None) -> np.ndarray:
    """Rows whose overlaps make a duplicate in flight: frontend requests, plus worker
    spans of traces whose frontend logs are absent (only a worker span whose request_id
    repeats can matter, so only those are looked up), but for those a worker refused
    (a Conflict: the id was held by another, never by them); only rows of the mask
    `among` when given."""
    rid = spans.request_id
    counts = np.bincount(rid[rid >= 0]) if (rid >= 0).any() else np.zeros(1, dtype=np.int64)
    repeated = (rid >= 0) & (counts[np.maximum(rid, 0)] > 1)
    candidate = spans.front.copy()
    if among is not None:
        candidate &= among
        repeated &= among
    workers = np.flatnonzero(spans.worker & repeated & ~spans.refused)
    candidate[workers[~spans.trace_in_front(workers)]] = True
    return np.flatnonzero(candidate)


def _unended_callers_by_their_workers(spans: SpanColumns) -> SpanColumns:
    """`spans` with each frontend caller that logged no end holding the id its worker
    spans hold (the latest-starting one's), for at least as long as they worked for it.

    Under the legacy id policy a caller's `request.start` logs a minted id and its later
    lines the client's, which it held: a caller whose frontend was killed left that one
    line, a minted id and an instant, and two callers in flight under one client id at
    the kill were no duplicate, though their workers' lines prove both (`--follow`,
    which holds a caller by its worker spans, printed it).
    """
    unended = spans.front & ~spans.ended & (spans.span >= 0)
    works = np.flatnonzero(spans.worker & (spans.parent >= 0) & (spans.request_id >= 0))
    if not unended.any() or not len(works):
        return spans
    row_of = np.full(max(spans.span_codes, 1), -1, dtype=np.int64)
    row_of[spans.span[unended]] = np.flatnonzero(unended)
    callers = row_of[spans.parent[works]]
    works, callers = works[callers >= 0], callers[callers >= 0]
    if not len(works):
        return spans
    order = np.argsort(spans.start[works], kind="stable")  # the latest start writes last
    works, callers = works[order], callers[order]
    source = np.arange(len(spans), dtype=np.int64)
    source[callers] = works
    request_id = spans.request_id.copy()
    request_id[callers] = spans.request_id[works]
    end = spans.end.copy()
    np.maximum.at(end, callers, spans.end[works])
    text = {**spans.text, "request_id": spans.text["request_id"].take(pa.array(source))}
    return replace(spans, request_id=request_id, end=end, text=text)


def ids_held_in_flight(requests: pd.DataFrame) -> tuple[pd.Series, np.ndarray]:
    """Each span's request_id and end (epoch µs) as `duplicate_in_flight` judges who held
    which id until when: a caller that logged no end holds its worker spans' id, for as
    long as they worked for it (`_unended_callers_by_their_workers`). The views ask it so
    they name the duplicates `analyze` reports."""
    spans = _unended_callers_by_their_workers(span_columns(requests))
    request_id = pd.Series(pd.arrays.ArrowExtensionArray(spans.text["request_id"]),
                           index=requests.index)
    return request_id, spans.end


def find_duplicate_in_flight(spans: SpanColumns) -> FindingColumns:
    """`duplicate_in_flight` on converted columns."""
    spans = _unended_callers_by_their_workers(spans)
    # A worker span stands for its caller: retries of one caller are one request.
    return _cluster_findings(
        "duplicate_in_flight", spans, _id_holders(spans), spans.caller(),
        key_column="request_id", what="request_id",
    )


def open_id_holders(spans: SpanColumns, closing: np.ndarray) -> int:
    """Ids held by a request with no end line and taken by a later caller (how many).

    A request's span ends at its last line read, so one still in flight when the logs
    were read (or whose process died mid-request) ends where its lines stop: a second
    caller that took its id afterwards overlaps nothing, and two requests holding one id
    at the end of the logs were "No findings.". Held open to the logs' latest time
    instead, such a request would be a duplicate in flight if it was still running, or
    none if its process had died: the logs cannot tell which, so the read is incomplete.
    `closing`: whether a line of each span closes it (its end is in the logs).
    """
    spans = _unended_callers_by_their_workers(spans)
    open_ids = spans.request_id[~closing]
    open_ids = open_ids[open_ids >= 0]
    if not len(open_ids):
        return 0
    # Only the ids an open span holds can change (clusters are per id).
    rows = _id_holders(spans, np.isin(spans.request_id, open_ids))
    unended = rows[~closing[rows]]
    if not len(unended):
        return 0
    # Open through the latest time read: a caller starting at that very time overlaps.
    held_open = replace(spans, end=np.where(closing, spans.end, spans.end.max() + 1))
    callers = spans.caller()
    found, _ = _shared_clusters(spans, "request_id", rows, callers, keys_in_text_order=False)
    if_open, cluster = _shared_clusters(held_open, "request_id", rows, callers,
                                        keys_in_text_order=False)
    unseen = np.isin(if_open, unended) & ~np.isin(if_open, found)
    return int(np.unique(cluster[unseen]).size)


def open_holders_reason(count: int) -> str:
    """The incomplete reason for `open_id_holders`' requests."""
    return (f"{count} request_id(s) held by a request with no end line in the logs were "
            "taken by a later caller: if that request was still in flight then (not cut "
            "short by its process's end), it is a duplicate in flight")


def duplicate_in_flight(requests: pd.DataFrame) -> pd.DataFrame:
    """Distinct requests (different span) that held the same request_id at overlapping times."""
    return findings_frame(find_duplicate_in_flight(span_columns(requests)))


def find_client_id_reuse(spans: SpanColumns) -> FindingColumns:
    """`client_id_reuse` on converted columns: among frontend requests, and callers seen
    only through their worker spans (their frontend logs absent), as `duplicate_in_flight`
    counts requests (a caller that logged no end held its client id while its worker
    spans worked for it)."""
    spans, rows = _client_id_holders(_unended_callers_by_their_workers(spans))
    # A client may send its id again once it has its answer: a request holds its client
    # id until then, not through the background tasks its app ran after it.
    stated = spans.answer_us >= 0
    answered = np.where(stated, np.minimum(spans.end, spans.start + spans.answer_us), spans.end)
    spans = replace(spans, end=answered)
    return _cluster_findings(
        "client_id_reuse", spans, rows,
        _request_identities(spans), key_column="x_request_id", what="client x_request_id",
    )


def _client_id_holders(spans: SpanColumns) -> tuple[SpanColumns, np.ndarray]:
    """`spans` with client ids coded on worker spans whose trace has no frontend span
    too (`span_columns` codes them on frontend spans only), and the rows that may hold
    one: frontend spans and those worker spans."""
    clients = spans.text["x_request_id"]
    workers = np.flatnonzero(spans.worker & np.asarray(
        pc.is_valid(clients).to_numpy(zero_copy_only=False), dtype=bool))
    # Called by a frontend span: its trace has one. Only the rest are asked by text (a
    # Dynamo worker logs the client id on every span: their traces' text was taken).
    workers = workers[spans.front_parents(workers) < 0]
    workers = workers[~spans.trace_in_front(workers)]
    if not len(workers):
        return spans, np.flatnonzero(spans.front)
    holders = spans.front.copy()
    holders[workers] = True
    (codes,), dictionary = shared_codes(clients.filter(pa.array(holders)))
    x_request_id = np.full(len(holders), -1, dtype=np.int64)
    x_request_id[holders] = codes
    spans = replace(spans, x_request_id=x_request_id,
                    dictionary={**spans.dictionary, "x_request_id": dictionary})
    return spans, np.flatnonzero(holders)


def _request_identities(spans: SpanColumns) -> np.ndarray:
    """Each span's request_id code; for a span nested in a caller that logged one, the
    caller's; for a span that logged none, its caller's id when another of its spans
    logged one, else a code of the caller's own.

    Dynamo releases before request ids were logged write only the client's
    `x_request_id` on their spans: two requests in flight with one client id are still
    two requests (two callers), which a match on logged request ids alone never saw.
    A gRPC stream's messages each log an id of their own, nested in the stream's span:
    one call, which was "1 requests held client x_request_id" on every stream.
    """
    rid = spans.request_id
    caller = spans.caller()
    itself = np.flatnonzero((caller == spans.span) & (caller >= 0) & (rid >= 0))
    of_own = np.full(max(spans.span_codes, 1), -1, dtype=np.int64)
    of_own[caller[itself]] = rid[itself]
    callers_own = np.where(caller >= 0, of_own[np.maximum(caller, 0)], -1)
    rid = np.where(callers_own >= 0, callers_own, rid)
    missing = rid < 0
    if not missing.any():
        return rid
    ident = rid.copy()
    known = ~missing & (caller >= 0)
    of_caller = np.full(max(spans.span_codes, 1), -1, dtype=np.int64)
    of_caller[caller[known]] = rid[known]
    fill = missing & (caller >= 0)
    ident[fill] = of_caller[caller[fill]]
    alone = fill & (ident < 0)
    ident[alone] = int(rid.max(initial=-1)) + 1 + caller[alone]
    return ident


def client_id_reuse(requests: pd.DataFrame) -> pd.DataFrame:
    """Overlapping requests that shared a client x_request_id under distinct request_ids."""
    return findings_frame(find_client_id_reuse(span_columns(requests)))
