"""The first SQL stage of the read, run by DuckDB: one event vocabulary for both formats.

`NORMALIZED` maps ridtrace/1 and Dynamo JSONL lines onto one event vocabulary. Dynamo
has no ``event`` key; its lifecycle is spelled in messages and span names, so those
are translated to the ridtrace names (``request.start``, ``worker.end``, …) and every
rule downstream deals with one format only.

The second stage, one row per span, is `ridtrace.forensics.reading.span_sql`.
"""

from __future__ import annotations

from ridtrace.contract import (
    DEPRECATED_HEADER,
    DISPATCH_ATTEMPT,
    DISPATCH_OVERLOADED,
    DISPATCH_RETRY,
    DURATION_MS,
    DYNAMO_COMPLETED,
    DYNAMO_DEPRECATED_PATTERN,
    DYNAMO_FRONTEND_SPANS,
    DYNAMO_GENERATE_FAILED,
    DYNAMO_HTTP_SPAN,
    DYNAMO_LATENCY_MS,
    DYNAMO_RECEIVED,
    DYNAMO_RESPONSE_SENT,
    DYNAMO_SENT_ID_FIELD,
    DYNAMO_SENT_ID_HEADER,
    DYNAMO_SPAN_CLOSED,
    DYNAMO_SPAN_CREATED,
    DYNAMO_SPAN_DURATION_US,
    DYNAMO_SPAN_FIRST_ENTRY,
    DYNAMO_WORKER_SPANS,
    FRONTEND,
    LOG_SCHEMA,
    OUTCOME_ERROR,
    OUTCOME_OK,
    REQUEST_END,
    REQUEST_START,
    RESPONSE_SENT,
    RESPONSE_UNLINKED,
    RIDTRACE_EVENTS,
    SPAN_CLOSED,
    UNLINKED_REQUEST,
    UNLINKED_RESPONSE,
    WORKER,
    WORKER_END,
    WORKER_ERROR,
    WORKER_EVENTS,
    WORKER_REFUSED,
    WORKER_START,
)
from ridtrace.forensics.reading.hex_ids import HEX_IDS, hex_id, span_or_null

# Events that end a span: the live rules judge a span once it has one.
# Dynamo's "http response sent" (RESPONSE_SENT) is its request's last line (`lean._DYN_END`).
CLOSING_EVENTS = (
    REQUEST_END, RESPONSE_SENT, SPAN_CLOSED, WORKER_END, WORKER_ERROR, WORKER_REFUSED,
)
# Dynamo's messages that are evidence on their own. SPAN_CREATED (SPAN_FIRST_ENTRY in
# newer releases) is no event of the vocabulary, but where a span began: at INFO level,
# its only line before the last, and all there is of a request still in flight.
DYNAMO_EVIDENCE_MESSAGES = (
    DYNAMO_RECEIVED, DYNAMO_COMPLETED, DYNAMO_RESPONSE_SENT, DYNAMO_GENERATE_FAILED,
    DYNAMO_SPAN_CLOSED, DYNAMO_SPAN_CREATED, DYNAMO_SPAN_FIRST_ENTRY,
)


def literal(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def literal_list(values: tuple[str, ...]) -> str:
    """A parenthesised list of SQL string literals, for ``IN``."""
    return "(" + ", ".join(literal(v) for v in values) + ")"


_RT = f"(schema = {literal(LOG_SCHEMA)})"
# structlog's JSONRenderer (docs/tracing.md: `add_request_ids` puts a request's ids on
# its lines): the message in `event`, the time its TimeStamper adds in `timestamp`.
# Read as any line of a request, no event of the vocabulary (`NORMALIZED`).
# A line in Dynamo's format: its mark, `target`. Only such a line has Dynamo's events:
# an application's structlog line or another logger's (`other_loggers`) has none.
DYNAMO_LINE = "target IS NOT NULL"
STRUCTLOG = ('(schema IS NULL AND target IS NULL AND "timestamp" IS NOT NULL '
             'AND event IS NOT NULL)')
_DYN_WORKER = f"(span_name IN {literal_list(DYNAMO_WORKER_SPANS)})"
_DYN_FRONT = f"(span_name IN {literal_list(DYNAMO_FRONTEND_SPANS)})"
_RECEIVED = f"(message = {literal(DYNAMO_RECEIVED)})"
_COMPLETED = f"(message = {literal(DYNAMO_COMPLETED)})"
_SENT = f"(message = {literal(DYNAMO_RESPONSE_SENT)})"
# Dynamo logs an Unlinked error as the error field of "engine generate call failed" on its
# native generate routes, and as the message itself on its OpenAI routes (chat,
# completions, responses, messages): ErrorMessage::internal_server_error writes "Internal
# server error: Failed to generate completions: Unlinked response; …".
DYNAMO_UNLINKED = (
    "(contains(error, 'Unlinked response') OR contains(error, 'Unlinked request') "
    f"OR contains(message, {literal(UNLINKED_RESPONSE)}) "
    f"OR contains(message, {literal(UNLINKED_REQUEST)}))"
)
_OLD_HEADER = f"nullif(regexp_extract(message, {literal(DYNAMO_DEPRECATED_PATTERN)}, 1), '')"
# The newer deprecation WARN names the header in a `header` field. Rust services log
# `header = %name` on other warnings too ("Skipping invalid header value"): read as the
# WARN, such a line sent a deprecated "content-type". The field counts on a line that
# says deprecated, as both of Dynamo's WARNs do. Tested on lines with a header only:
# lower() copied every message of every Dynamo line (0.016 CPU-s per 350k lines).
DYNAMO_WARNED_HEADER = ("(CASE WHEN header IS NOT NULL AND contains(lower(message), "
                        "'deprecated') THEN header END)")
_DYN_DEPRECATED = f"coalesce({DYNAMO_WARNED_HEADER}, {_OLD_HEADER})"
# A request a Dynamo release before the fix took an x-dynamo-request-id from: each line
# of its http-request span names the header's value (`contract.DYNAMO_SENT_ID_FIELD`).
DYNAMO_SENT_ID = f"""(CASE WHEN span_name = {literal(DYNAMO_HTTP_SPAN)}
    AND "{DYNAMO_SENT_ID_FIELD}" IS NOT NULL THEN {literal(DYNAMO_SENT_ID_HEADER)} END)"""
# ... and that value was the id it held in flight: at the default INFO level no line of
# such a request names a request_id, and two callers that sent one value were no
# duplicate. A request_id a line names is still the one it held.
DYNAMO_REQUEST_ID = f"""coalesce(request_id, CASE WHEN span_name = {literal(DYNAMO_HTTP_SPAN)}
    THEN "{DYNAMO_SENT_ID_FIELD}" END)"""
# With DYN_LOGGING_SPAN_EVENTS=1 Dynamo logs SPAN_FIRST_ENTRY/SPAN_CLOSED for every span,
# background ones too (lease keepalive, discovery): each has a span_id and a trace_id,
# and read as a request, 20 of them made 2 requests 22. A line is a request span's when
# its span is one of the request spans, or names a request's id (the steps nested in a
# request carry it), or names no span (no telling: kept). Dynamo writes a span's fields
# on each of its lines, so all lines of one span agree, in whatever part they are read.
DYNAMO_REQUEST_SPAN = f"""(span_name IS NULL
    OR span_name IN {literal_list((*DYNAMO_FRONTEND_SPANS, *DYNAMO_WORKER_SPANS))}
    OR request_id IS NOT NULL OR x_request_id IS NOT NULL
    OR "{DYNAMO_SENT_ID_FIELD}" IS NOT NULL)"""
# Dynamo logs axum's URI: with its query string (`?api-version=…`), and for an HTTP/2
# request in absolute form (`http://host:port/path`). The route is its path alone, as
# ridtrace's own `path` is, or one endpoint is several routes.
DYNAMO_ROUTE = r"""regexp_replace(regexp_replace(uri, '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*', ''),
    '[?#].*$', '')"""
# Later rows of the translation table win, as a line can match several.
_DYN_EVENT = f"""CASE
    WHEN message = {literal(DYNAMO_SPAN_CLOSED)} THEN {literal(SPAN_CLOSED)}
    WHEN {DYNAMO_UNLINKED} THEN {literal(RESPONSE_UNLINKED)}
    WHEN {_DYN_DEPRECATED} IS NOT NULL THEN {literal(DEPRECATED_HEADER)}
    WHEN {_SENT} THEN {literal(RESPONSE_SENT)}
    WHEN {_COMPLETED} AND {_DYN_FRONT} THEN {literal(REQUEST_END)}
    WHEN {_COMPLETED} AND {_DYN_WORKER} THEN {literal(WORKER_END)}
    WHEN {_RECEIVED} AND {_DYN_FRONT} THEN {literal(REQUEST_START)}
    WHEN {_RECEIVED} AND {_DYN_WORKER} THEN {literal(WORKER_START)}
END"""
# Dynamo's metrics line says "success"; the HTTP code is on "http response sent".
DYNAMO_OUTCOME = f"""CASE
    WHEN message = {literal(DYNAMO_GENERATE_FAILED)} THEN {literal(OUTCOME_ERROR)}
    WHEN {_COMPLETED} AND {_DYN_FRONT}
        THEN CASE WHEN status = 'success' THEN {literal(OUTCOME_OK)} ELSE status END
END"""


# A stated duration beyond this is no request's: a garbage value would move its start
# years back and overlap it with everything.
_LONGEST_SPAN_US = 7 * 24 * 3600 * 1_000_000


# ridtrace's lines that open a span, and those that close it stating its `duration_ms`.
RIDTRACE_STARTS = (REQUEST_START, WORKER_START)
_RT_ENDS = (REQUEST_END, WORKER_END)


def began(is_ridtrace: str) -> str:
    """When a line's span began: its time, less the duration a line that closes the span
    states (Dynamo's ``http response sent`` `latency_ms`, ``SPAN_CLOSED``'s
    `time.duration_us`; ridtrace's `request.end` and `worker.end` `duration_ms`). Dynamo
    logs ``request received`` at DEBUG, so at its default INFO level a frontend span is
    that one line; a ridtrace span whose ``request.start`` was lost (rotated away, a torn
    line) is its ``request.end``: without the duration it starts where it ends, and two
    requests that held one id at once never overlapped. A ridtrace span with its start
    line starts at it (`started`). Over raw fields with ``_t``; `is_ridtrace` is the SQL
    test of a ridtrace/1 line."""
    stated = f"""(CASE WHEN ({is_ridtrace}) IS TRUE THEN (CASE WHEN event IN
        {literal_list(_RT_ENDS)} THEN TRY_CAST("{DURATION_MS}" AS DOUBLE) * 1000 END)
        ELSE (CASE message
        WHEN {literal(DYNAMO_RESPONSE_SENT)} THEN TRY_CAST("{DYNAMO_LATENCY_MS}" AS DOUBLE) * 1000
        WHEN {literal(DYNAMO_SPAN_CLOSED)} THEN TRY_CAST("{DYNAMO_SPAN_DURATION_US}" AS DOUBLE)
    END) END)"""
    # NaN compares above every number in DuckDB, so the upper bound drops it too.
    return f"""CASE WHEN {stated} BETWEEN 0 AND {_LONGEST_SPAN_US}
        THEN _t - to_microseconds(CAST({stated} AS BIGINT)) ELSE _t END"""


def answered_in(is_ridtrace: str) -> str:
    """How long a line's request took to answer, in µs, as its ridtrace ``request.end``
    states (``duration_ms``); null on every other line. The middleware logs that line
    once the app's call returns, after the background tasks it runs past the response:
    the span's lines run on to it, while the client had its answer ``duration_ms`` after
    the start (`rules.overlap.find_client_id_reuse`). Over raw fields, or over events
    (`NORMALIZED` keeps ``duration_ms``); `is_ridtrace` is the SQL test of a ridtrace/1
    line."""
    stated = f'TRY_CAST("{DURATION_MS}" AS DOUBLE) * 1000'
    return f"""CASE WHEN ({is_ridtrace}) IS TRUE AND event = {literal(REQUEST_END)}
        AND {stated} BETWEEN 0 AND {_LONGEST_SPAN_US} THEN CAST({stated} AS BIGINT) END"""


def started(is_ridtrace: str) -> str:
    """Whether a line opens a ridtrace span (`request.start`, `worker.start`): such a
    span starts at its first line, not by the duration its end states (`began`), which
    the timer that measured it puts a little before that line."""
    return f"(({is_ridtrace}) IS TRUE AND event IN {literal_list(RIDTRACE_STARTS)})"


# A dispatch line names a worker tried, not the one that served: a span took the first
# `worker` of its lines, so a request retried after a Conflict was said to be served by
# the worker that refused it. request.end names the worker that served.
DISPATCH_EVENTS = literal_list((DISPATCH_ATTEMPT, DISPATCH_RETRY, DISPATCH_OVERLOADED))

# What a frontend's dispatch line says of its attempt, for `ridtrace trace`: the worker
# tried, and for a retry why that attempt was given up (`dispatch.retry`'s `reason`).
DISPATCH_DETAIL = f"""CASE WHEN event IN {DISPATCH_EVENTS} THEN nullif(concat_ws(', ',
    'worker ' || worker, 'reason ' || reason,
    CASE WHEN marked_down = 'true' THEN 'marked down' END), '') END"""


# The events' `format` of a line in neither ridtrace's nor Dynamo's format.
UNMARKED_FORMAT = "other"


def _pick(ridtrace: str, dynamo: str) -> str:
    return f"CASE WHEN {_RT} THEN {ridtrace} ELSE {dynamo} END"


# A ridtrace/1 line that is one of ridtrace's own events (`contract.RIDTRACE_EVENTS`).
RIDTRACE_EVENT = f"(event IN {literal_list(RIDTRACE_EVENTS)})"
# One of a worker's: its span is a worker's.
WORKER_EVENT = f"(event IN {literal_list(WORKER_EVENTS)})"


def lifecycle_only(field: str, lifecycle: str = RIDTRACE_EVENT) -> str:
    """A ridtrace/1 line's lifecycle `field` (outcome, status, fingerprints, …), read on
    lifecycle lines only (`lifecycle`: the SQL test of one, `RIDTRACE_EVENT` or a column
    holding it): an application's own line under the same name (`status=404` from a
    cache lookup, `outcome="cache_miss"`, `error="redis timeout"`) was taken as the
    request's, and `trace` and Jaeger showed a failed request as a 200."""
    return f"CASE WHEN {lifecycle} THEN {field} END"


_WHOLE_STATUS = ("coalesce(CAST(TRY_CAST(CASE WHEN ends_with(status, '.0') THEN status END "
                 "AS DOUBLE) AS BIGINT)::VARCHAR, status)")


def ridtrace_deprecated(lifecycle: str = RIDTRACE_EVENT) -> str:
    """The deprecated headers a ridtrace/1 line names: its lifecycle line's list, or
    the header a `deprecated_header` WARN names (`lifecycle` as `lifecycle_only`)."""
    return (f"coalesce({lifecycle_only('deprecated_headers', lifecycle)}, "
            f"CASE WHEN event = {literal(DEPRECATED_HEADER)} THEN header END)")
# Column name → expression over the raw fields, in the events frame's column order.
NORMALIZED: dict[str, str] = {
    "time": "_t",
    "began": began(_RT),
    # An application's structlog line or another logger's (`other_loggers`) is neither
    # format's: a line of its request, never one that makes a request (`span_sql`).
    "format": f"CASE WHEN {_RT} THEN 'ridtrace' WHEN {DYNAMO_LINE} THEN 'dynamo' "
              f"ELSE {literal(UNMARKED_FORMAT)} END",
    "level": "CASE WHEN level = 'WARNING' THEN 'WARN' ELSE level END",
    "event": _pick("event", f"CASE WHEN {DYNAMO_LINE} THEN {_DYN_EVENT} END"),
    "side": _pick(
        f"CASE WHEN {WORKER_EVENT} THEN {literal(WORKER)} END",
        f"CASE WHEN {_DYN_WORKER} THEN {literal(WORKER)} "
        f"WHEN {_DYN_FRONT} THEN {literal(FRONTEND)} END",
    ),
    # A shipper that parses JSON writes numbers as floats (Cloud Logging's jsonPayload):
    # a status 500.0 is the status 500.
    "status": _pick(lifecycle_only(_WHOLE_STATUS), f"CASE WHEN {_SENT} THEN status END"),
    "outcome": _pick(lifecycle_only("outcome"),
                     f"CASE WHEN {DYNAMO_LINE} THEN {DYNAMO_OUTCOME} END"),
    "route": _pick(lifecycle_only("coalesce(route, path)"), DYNAMO_ROUTE),
    "method": _pick(lifecycle_only("method"), "method"),
    "service": _pick(
        "service", f"CASE WHEN NOT {DYNAMO_LINE} THEN NULL "
                   f"WHEN {_DYN_WORKER} THEN 'dynamo-worker' ELSE 'dynamo-frontend' END"
    ),
    "worker": _pick(lifecycle_only("worker", f"{RIDTRACE_EVENT} AND event NOT IN "
                                             f"{DISPATCH_EVENTS}"), "NULL"),
    "message": "message",
    # The span's own name as its service logged it (Dynamo's `http-request`, `generate`,
    # `handle_payload`): what the views name a step with no route of its own by.
    "span_name": "span_name",
    "request_id": _pick("request_id", DYNAMO_REQUEST_ID),
    "x_request_id": "x_request_id",
    "trace_id": "trace_id",
    # A background span's lines key no span: no request holds them.
    # OpenTelemetry's all-zero id names no span, and no caller: as if none were logged.
    "span_id": _pick(span_or_null("span_id"),
                     f"CASE WHEN {DYNAMO_REQUEST_SPAN} THEN {span_or_null('span_id')} END"),
    "parent_span_id": _pick(span_or_null("parent_span_id"), span_or_null("parent_id")),
    "fp_in": _pick(lifecycle_only("fp_in"), "NULL"),
    "fp_out": _pick(lifecycle_only("fp_out"), "NULL"),
    "deprecated": _pick(
        ridtrace_deprecated(),
        # Only Dynamo's line: another logger's naming a header is never a use of it.
        f"""CASE WHEN NOT {DYNAMO_LINE} THEN NULL
            ELSE CASE ({_DYN_EVENT}) WHEN {literal(DEPRECATED_HEADER)} THEN {_DYN_DEPRECATED}
            WHEN {literal(SPAN_CLOSED)} THEN NULL WHEN {literal(RESPONSE_UNLINKED)} THEN NULL
            ELSE {DYNAMO_SENT_ID} END END""",
    ),
    "client": _pick(lifecycle_only("client"), "client"),
    "error": _pick(lifecycle_only("error"), f"CASE WHEN {DYNAMO_LINE} THEN error END"),
    "dispatch": _pick(DISPATCH_DETAIL, "NULL"),
    "chunk_request_id": _pick("chunk_request_id", "NULL"),
    # Stated durations date spans back already (`began`); the views read them too, to
    # tell a span whose answer states when it began from one whose start was lost:
    # Dynamo's in ms as ridtrace's (an INFO-level span whose deprecated-header WARN came
    # at the start its latency_ms gives was "no start logged" in `trace` and Jaeger).
    DURATION_MS: _pick(f'"{DURATION_MS}"', f"""CASE WHEN {DYNAMO_LINE} THEN CAST((CASE message
        WHEN {literal(DYNAMO_RESPONSE_SENT)} THEN TRY_CAST("{DYNAMO_LATENCY_MS}" AS DOUBLE)
        WHEN {literal(DYNAMO_SPAN_CLOSED)} THEN TRY_CAST("{DYNAMO_SPAN_DURATION_US}" AS DOUBLE)
            / 1000 END) AS VARCHAR) END"""),
}


_TIMES = ("time", "began")


def normalized_select(source: str, *, keep: tuple[str, ...] = (), hex_ids: bool = False) -> str:
    """Events (``rn`` first, then `keep`) from a relation of raw fields with ``rn``, ``_t``
    and ``_ev`` (`scan.LEAN_EVIDENCE`, the events' ``evidence``); `hex_ids`: the ids spelt
    one way (`hex_id`), as the rules' lean read spells them."""
    exprs = dict(NORMALIZED)
    if hex_ids:
        for name, trace in HEX_IDS.items():
            exprs[name] = hex_id(f"({exprs[name]})", trace=trace)
    cols = ",\n    ".join(
        f"{expr} AS {name}" if name in _TIMES else f"({expr})::VARCHAR AS {name}"
        for name, expr in exprs.items()
    )
    extra = "".join(f"{k}, " for k in keep)
    return f"SELECT rn, {extra}\n    {cols},\n    _ev AS evidence\nFROM {source}"
