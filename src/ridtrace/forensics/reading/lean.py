"""The lean per-span pass: raw fields straight to one row per span.

`ridtrace analyze` and the live follower read through it. `sql.NORMALIZED` spells every
event of both formats in one vocabulary, which the event views need; the rules need
far less: per span the first parent, client id, outcome and fingerprints, the last
request id, whether any line is a worker's, the first Unlinked, foreign-chunk and
deprecated-header line, and how the span ended. This pass computes just those from the
raw fields, with the same picks as `sql.span_aggregates` (display-only fields left
null), so its rows equal the full path's (``tests/forensics/test_lean_spans.py``).

A span's lines group on (trace_id, span_id); a suspect line is a row of its own, keyed
by its row number, to be judged in Python.
"""

from __future__ import annotations

from ridtrace.contract import (
    DEPRECATED_HEADER,
    DYNAMO_COMPLETED,
    DYNAMO_DEPRECATED_PATTERN,
    DYNAMO_FRONTEND_SPANS,
    DYNAMO_GENERATE_FAILED,
    DYNAMO_RESPONSE_SENT,
    DYNAMO_SPAN_CLOSED,
    DYNAMO_WORKER_SPANS,
    FOREIGN_CHUNK,
    FRONTEND,
    LOG_SCHEMA,
    OUTCOME_ERROR,
    OUTCOME_OK,
    REQUEST_END,
    RESPONSE_UNLINKED,
    SPAN_CLOSED,
    WORKER,
    WORKER_END,
    WORKER_ERROR,
    WORKER_EVENT_PREFIX,
    WORKER_REFUSED,
)
from ridtrace.forensics.reading.sql import DISPLAY_FIELDS, literal

# Kinds of grouped row, in the ``_kind`` column.
SUSPECT, OTHER, SPAN = 0, 1, 2

_RT = f"(schema = {literal(LOG_SCHEMA)}) IS TRUE"


def _in(values: tuple[str, ...]) -> str:
    return "(" + ", ".join(literal(v) for v in values) + ")"


# Dynamo's translation (`sql._DYN_EVENT`) for just the three events a span row keeps:
# a SPAN_CLOSED line is none of them, an Unlinked error is not a deprecated header.
_DYN_CLOSED = f"(message = {literal(DYNAMO_SPAN_CLOSED)}) IS TRUE"
_DYN_UNLINKED = (
    f"(NOT {_DYN_CLOSED} AND (contains(error, 'Unlinked response') "
    f"OR contains(error, 'Unlinked request')) IS TRUE)"
)
# The regular expression runs only on messages that can match it.
_DYN_OLD_HEADER = (
    f"CASE WHEN contains(message, ' header is deprecated') THEN "
    f"nullif(regexp_extract(message, {literal(DYNAMO_DEPRECATED_PATTERN)}, 1), '') END"
)
_DYN_DEPRECATED = (
    f"CASE WHEN {_DYN_CLOSED} OR {_DYN_UNLINKED} THEN NULL "
    f"ELSE coalesce(header, {_DYN_OLD_HEADER}) END"
)
_DYN_COMPLETED = f"message = {literal(DYNAMO_COMPLETED)}"
# How a line ends its span (``_end``): 1 request.end, 2 worker.end, 3 any other close.
_RT_END = f"""CASE event WHEN {literal(REQUEST_END)} THEN 1 WHEN {literal(WORKER_END)} THEN 2
    WHEN {literal(SPAN_CLOSED)} THEN 3 WHEN {literal(WORKER_ERROR)} THEN 3
    WHEN {literal(WORKER_REFUSED)} THEN 3 ELSE 0 END"""
_DYN_END = f"""CASE WHEN {_DYN_CLOSED} THEN 3 WHEN {_DYN_UNLINKED} THEN 0
    WHEN coalesce(header, {_DYN_OLD_HEADER}) IS NOT NULL THEN 0
    WHEN message = {literal(DYNAMO_RESPONSE_SENT)} THEN 0
    WHEN {_DYN_COMPLETED} AND span_name IN {_in(DYNAMO_FRONTEND_SPANS)} THEN 1
    WHEN {_DYN_COMPLETED} AND span_name IN {_in(DYNAMO_WORKER_SPANS)} THEN 2 ELSE 0 END"""
_DYN_OUTCOME = f"""CASE
    WHEN message = {literal(DYNAMO_GENERATE_FAILED)} THEN {literal(OUTCOME_ERROR)}
    WHEN message = {literal(DYNAMO_COMPLETED)} AND span_name IN {_in(DYNAMO_FRONTEND_SPANS)}
        THEN CASE WHEN status = 'success' THEN {literal(OUTCOME_OK)} ELSE status END
END"""
_RT_DEPRECATED = (
    f"coalesce(deprecated_headers, "
    f"CASE WHEN event = {literal(DEPRECATED_HEADER)} THEN header END)"
)

# Per line: the fields the aggregates read, each format's spelling resolved.
_LINE = f"""
    rn, _t AS time, request_id, x_request_id,
    CASE WHEN _rt THEN parent_span_id ELSE parent_id END AS parent_span_id,
    CASE WHEN _rt THEN outcome ELSE {_DYN_OUTCOME} END AS outcome,
    CASE WHEN _rt THEN fp_in END AS fp_in,
    CASE WHEN _rt THEN fp_out END AS fp_out,
    CASE WHEN _rt THEN starts_with(event, {literal(WORKER_EVENT_PREFIX)})
         ELSE span_name IN {_in(DYNAMO_WORKER_SPANS)} END AS _worker,
    CASE WHEN _rt THEN event = {literal(RESPONSE_UNLINKED)} ELSE {_DYN_UNLINKED} END
        AS _unlinked,
    _rt AND event = {literal(FOREIGN_CHUNK)} AS _foreign,
    CASE WHEN _rt THEN {_RT_DEPRECATED} ELSE {_DYN_DEPRECATED} END AS deprecated,
    coalesce(error, message) AS _text, chunk_request_id,
    (CASE WHEN _rt THEN {_RT_END} ELSE {_DYN_END} END)::TINYINT AS _end,
    trace_id, span_id, _suspect, _empty, _time_text, _in_window,
    CASE WHEN _suspect THEN {SUSPECT} WHEN _ev AND span_id IS NOT NULL THEN {SPAN}
         ELSE {OTHER} END::TINYINT AS _kind
"""


def _first(col: str) -> str:
    return f"arg_min({col}, rn) FILTER (WHERE {col} IS NOT NULL) AS {col}"


def lean_spans_sql(source: str) -> str:
    """Per-span rows of `source` (`table._source_sql`, lean), one row per suspect line.

    Columns as `sql.span_aggregates` gives them (display fields null), plus ``_kind``,
    ``span_key`` and the flags `LogTable.spans` judges suspect lines by.
    """
    display = ", ".join(f"NULL::VARCHAR AS {c}" for c in DISPLAY_FIELDS)
    return f"""
SELECT _kind, _trace AS trace_id, _span AS span_id, hash(_trace, _span) AS span_key,
    arg_max(request_id, rn) FILTER (WHERE request_id IS NOT NULL) AS request_id,
    {_first("parent_span_id")}, {_first("x_request_id")}, {_first("outcome")},
    {_first("fp_in")}, {_first("fp_out")}, {display},
    CASE WHEN bool_or(_worker) THEN {literal(WORKER)} ELSE {literal(FRONTEND)} END AS side,
    min(time) AS start, max(time) AS "end",
    min(rn) AS first_rn, max(rn) AS last_rn, count(*) AS lines,
    arg_min(_text, rn) FILTER (WHERE _unlinked) AS unlinked,
    min(rn) FILTER (WHERE _unlinked) AS unlinked_rn,
    arg_min(chunk_request_id, rn) FILTER (WHERE _foreign) AS "foreign",
    min(rn) FILTER (WHERE _foreign) AS foreign_rn,
    arg_min(deprecated, rn) FILTER (WHERE deprecated IS NOT NULL) AS deprecated,
    min(rn) FILTER (WHERE deprecated IS NOT NULL) AS deprecated_rn,
    bool_or(_end > 0) AS closing, bool_or(_end = 1) AS request_end,
    bool_or(_end = 2) AS worker_end,
    bool_or(_empty) AS _empty, bool_or(_time_text IS NOT NULL) AS _timed,
    bool_or(time IS NULL) AS _untimed, count(*) FILTER (WHERE _in_window) AS _window
FROM (
    SELECT *, CASE _kind WHEN {SUSPECT} THEN rn END AS _row,
        CASE _kind WHEN {SPAN} THEN trace_id END AS _trace,
        CASE _kind WHEN {SPAN} THEN span_id END AS _span
    FROM (SELECT {_LINE} FROM (SELECT *, {_RT} AS _rt FROM ({source})))
)
GROUP BY _kind, _row, _trace, _span
"""
