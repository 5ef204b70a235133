"""The lean per-span pass: raw fields straight to one row per span.

`ridtrace analyze` and the live follower read through it. `sql.NORMALIZED` spells every
event of both formats in one vocabulary, which the event views need; the rules need
far less: per span the first parent, client id, outcome and fingerprints, the last
request id, whether any line is a worker's, the first Unlinked, foreign-chunk and
deprecated-header line, and how the span ended. This pass computes just those from the
raw fields, with the same picks as `span_sql.span_aggregates` (display-only fields left
null), so its rows equal the full path's (``tests/forensics/test_lean_spans.py``).

A span's lines group on (trace_id, span_id), each id spelt one way (`hex_ids`: the
rules link a worker to its caller by them, whatever spelling each log used; the full
path keeps ids as logged, which the event views show); the suspect lines are one row,
listing their row numbers and flags (``_suspects``), to be judged in Python.
"""

from __future__ import annotations

from ridtrace.contract import (
    DEPRECATED_HEADER,
    DEPRECATED_ID_HEADERS,
    DYNAMO_COMPLETED,
    DYNAMO_DEPRECATED_PATTERN,
    DYNAMO_FRONTEND_SPANS,
    DYNAMO_HTTP_SPAN,
    DYNAMO_INNER_SPANS,
    DYNAMO_RESPONSE_SENT,
    DYNAMO_SPAN_CLOSED,
    DYNAMO_WORKER_SPANS,
    FOREIGN_CHUNK,
    FRONTEND,
    LOG_SCHEMA,
    REQUEST_END,
    RESPONSE_UNLINKED,
    SPAN_CLOSED,
    WORKER,
    WORKER_END,
    WORKER_ERROR,
    WORKER_REFUSED,
)
from ridtrace.forensics.reading.deprecated_sql import header_bits, with_every_header
from ridtrace.forensics.reading.hex_ids import hex_id, names_a_span
from ridtrace.forensics.reading.span_sql import DISPLAY_FIELDS
from ridtrace.forensics.reading.sql import (
    DYNAMO_LINE,
    DYNAMO_OUTCOME,
    DYNAMO_REQUEST_ID,
    DYNAMO_REQUEST_SPAN,
    DYNAMO_SENT_ID,
    DYNAMO_UNLINKED,
    DYNAMO_WARNED_HEADER,
    RIDTRACE_EVENT,
    WORKER_EVENT,
    answered_in,
    began,
    lifecycle_only,
    literal,
    literal_list,
    ridtrace_deprecated,
    started,
)

# Kinds of grouped row, in the ``_kind`` column.
SUSPECT, OTHER, SPAN = 0, 1, 2

_RT = f"(schema = {literal(LOG_SCHEMA)}) IS TRUE"


# Dynamo's translation (`sql._DYN_EVENT`) for just the three events a span row keeps:
# a SPAN_CLOSED line is none of them, an Unlinked error is not a deprecated header.
_DYN_CLOSED = f"(message = {literal(DYNAMO_SPAN_CLOSED)}) IS TRUE"
_DYN_UNLINKED = "(NOT _dyn_closed AND _dyn_unlinked_text)"
_DYN_DEPRECATED = (
    f"CASE WHEN _dyn_closed OR {_DYN_UNLINKED} THEN NULL "
    f"ELSE coalesce(_dyn_warned, _dyn_old_header, {DYNAMO_SENT_ID}) END"
)
# Per-line terms the span row reads more than once, computed once per line below the
# scan's row numbering (`scan.source_sql`). DuckDB inlines a subquery's expressions
# wherever they are used, and the window is what it computes once: each time was cast
# from text 1.85 times per line, and the four Unlinked tests ran ~12 searches a line.
# The Dynamo terms are computed on the lines that are not ridtrace's only, as the CASE
# that reads them did (a ridtrace worker's line cost 5 % more with them on every line).
_DYNAMO_TERMS = {
    "_dyn_closed": _DYN_CLOSED,
    "_dyn_unlinked_text": f"{DYNAMO_UNLINKED} IS TRUE",
    "_dyn_warned": DYNAMO_WARNED_HEADER,
    # The regular expression runs only on messages that can match it.
    "_dyn_old_header": (
        f"CASE WHEN contains(message, ' header is deprecated') THEN "
        f"nullif(regexp_extract(message, {literal(DYNAMO_DEPRECATED_PATTERN)}, 1), '') END"
    ),
}
LINE_TERMS: dict[str, str] = {
    "_rt": _RT,
    # One of ridtrace's own events (`sql.RIDTRACE_EVENT`), whose lifecycle fields count.
    "_life": f"CASE WHEN {_RT} THEN {RIDTRACE_EVENT} END IS TRUE",
    **{name: f"CASE WHEN NOT {_RT} THEN {sql} END" for name, sql in _DYNAMO_TERMS.items()},
}
_DYN_COMPLETED = f"message = {literal(DYNAMO_COMPLETED)}"
# How a line ends its span (``_end``): 1 request.end, 2 worker.end, 3 any other close.
# Dynamo's "http response sent" is its request's last line (at INFO level its only one),
# so it closes the span: read as no close, it held the span open for good live, and a
# later holder of its id was printed as a duplicate `analyze` did not find.
_RT_END = f"""CASE event WHEN {literal(REQUEST_END)} THEN 1 WHEN {literal(WORKER_END)} THEN 2
    WHEN {literal(SPAN_CLOSED)} THEN 3 WHEN {literal(WORKER_ERROR)} THEN 3
    WHEN {literal(WORKER_REFUSED)} THEN 3 ELSE 0 END"""
_DYN_END = f"""CASE WHEN _dyn_closed THEN 3 WHEN {_DYN_UNLINKED} THEN 0
    WHEN coalesce(_dyn_warned, _dyn_old_header) IS NOT NULL THEN 0
    WHEN message = {literal(DYNAMO_RESPONSE_SENT)} THEN 3
    WHEN {_DYN_COMPLETED} AND span_name IN {literal_list(DYNAMO_FRONTEND_SPANS)} THEN 1
    WHEN {_DYN_COMPLETED} AND span_name IN {literal_list(DYNAMO_WORKER_SPANS)} THEN 2 ELSE 0 END"""


# A caller's span id spelt one way, NULL for the all-zero id (no caller). The check is
# outside the spelling: inside it, the spelling's many uses of its column each computed
# the check again (1.06-1.08x the read's CPU).
def _caller_id(column: str) -> str:
    return f"(CASE WHEN {names_a_span(column)} THEN {hex_id(column)} END)"


# A line that lists a request's deprecated headers (`span_sql.span_aggregates`): preferred to
# the WARN before it, which names one of them.
_LISTED = f"""(_life AND deprecated_headers IS NOT NULL
    AND event <> {literal(DEPRECATED_HEADER)})"""
# Only Dynamo's line (`sql.DYNAMO_LINE`): an application's structlog line or another
# logger's (`other_loggers`) is read in a batch of small files (`small_files`, every line
# kept) but is no Unlinked error nor deprecated-header WARN, whatever it quotes; one
# without a span_id was named as evidence no request holds, and the read "incomplete".
# Per line: the fields the aggregates read, each format's spelling resolved.
_LINE = f"""
    rn, _t AS time, {began("_rt")} AS _began, {started("_rt")} AS _started,
    {answered_in("_rt")} AS _answer_us,
    CASE WHEN _rt THEN request_id ELSE {DYNAMO_REQUEST_ID} END AS request_id, x_request_id,
    CASE WHEN _rt THEN {_caller_id("parent_span_id")} ELSE {_caller_id("parent_id")} END
        AS parent_span_id,
    CASE WHEN _rt THEN {lifecycle_only("outcome", "_life")} ELSE {DYNAMO_OUTCOME} END
        AS outcome,
    CASE WHEN _rt THEN {lifecycle_only("fp_in", "_life")} END AS fp_in,
    CASE WHEN _rt THEN {lifecycle_only("fp_out", "_life")} END AS fp_out,
    CASE WHEN _rt THEN {WORKER_EVENT}
         ELSE span_name IN {literal_list(DYNAMO_WORKER_SPANS)} END AS _worker,
    (NOT _rt AND span_name IN {literal_list(DYNAMO_INNER_SPANS)}) IS TRUE AS _inner,
    (NOT _rt AND span_name = {literal(DYNAMO_HTTP_SPAN)}) IS TRUE AS _outer,
    CASE WHEN _rt THEN event = {literal(RESPONSE_UNLINKED)}
         WHEN {DYNAMO_LINE} THEN {_DYN_UNLINKED} END AS _unlinked,
    _rt AND event = {literal(FOREIGN_CHUNK)} AS _foreign,
    CASE WHEN _rt THEN {ridtrace_deprecated("_life")} WHEN {DYNAMO_LINE} THEN {_DYN_DEPRECATED} END
        AS deprecated,
    {_LISTED} AS _listed,
    coalesce(error, message) AS _text, chunk_request_id,
    (CASE WHEN _rt THEN {_RT_END} ELSE {_DYN_END} END)::TINYINT AS _end,
    {hex_id("trace_id", trace=True)} AS trace_id,
    CASE WHEN _keyed THEN {hex_id("span_id")} END AS span_id,
    _suspect, _empty, _time_text, _in_window,
    CASE WHEN _suspect THEN {SUSPECT} WHEN _ev AND _keyed THEN {SPAN}
         ELSE {OTHER} END::TINYINT AS _kind
"""
# A background span's lines (`sql.DYNAMO_REQUEST_SPAN`) key no span, as in the full read.
_KEYED = f"{names_a_span('span_id')} AND (_rt OR {DYNAMO_REQUEST_SPAN} IS TRUE)"


# Per line, one small integer of flags, so the span row takes them in one aggregate.
_WORKER_BIT, _CLOSING_BIT, _REQUEST_END_BIT, _WORKER_END_BIT = 1, 2, 4, 8
_EMPTY_BIT, _TIMED_BIT, _UNTIMED_BIT = 16, 32, 64
# A ridtrace start line (`sql.started`); never on a suspect line, whose bits are packed.
_STARTED_BIT = 128
# The deprecated headers a line names (`deprecated_sql`), from this bit; never on a
# suspect line either.
_HEADER_SHIFT = 8
_HEADER_MASK = (1 << len(DEPRECATED_ID_HEADERS)) - 1
# A line of a span Dynamo opens inside another (`contract.DYNAMO_INNER_SPANS`), and of
# the span it opens them in (`contract.DYNAMO_HTTP_SPAN`), above the header bits; never
# on a suspect line.
_INNER_BIT, _OUTER_BIT = 1 << 14, 1 << 15
_BITS = f"""(CASE WHEN _worker THEN {_WORKER_BIT} ELSE 0 END
    + CASE _end WHEN 0 THEN 0 WHEN 1 THEN {_CLOSING_BIT | _REQUEST_END_BIT}
           WHEN 2 THEN {_CLOSING_BIT | _WORKER_END_BIT} ELSE {_CLOSING_BIT} END
    + CASE WHEN _suspect THEN (CASE WHEN _empty THEN {_EMPTY_BIT} ELSE 0 END
        + CASE WHEN _time_text IS NOT NULL THEN {_TIMED_BIT} ELSE 0 END
        + CASE WHEN time IS NULL THEN {_UNTIMED_BIT} ELSE 0 END)
      ELSE (CASE WHEN _started THEN {_STARTED_BIT} ELSE 0 END
            + CASE WHEN _inner THEN {_INNER_BIT} WHEN _outer THEN {_OUTER_BIT} ELSE 0 END
            + {header_bits("deprecated", shift=_HEADER_SHIFT)}) END)::USMALLINT"""


# Suspect lines (no record, or no time) are one group per file, each line in its
# ``_suspects`` list as ``rn * SUSPECT_PACK + _bits``: a group of its own per line held
# every aggregate's state for it, ~1 KiB a line, and a plain-text log of 1M lines in a
# log folder took 1.2 GB. The few flags they are judged by fit below the pack.
SUSPECT_PACK = 128
# At most this many suspect lines of a file (or a Dask block) are listed to be judged,
# the first ones: a list of every one held ~70 B a line, and a 10 KB gzip of "1" lines
# (5M lines) took 560 MB, a 4 GiB one of text 12 GB. The rest are counted as bad lines
# unjudged (`suspects.count_unjudged`), the file named incomplete. DuckDB's `min(x, n)`
# keeps the n smallest in a bounded heap (n below 1,000,000), which takes room for n
# in each group it is given one: a batch of small files (`small_files`, 64 of them,
# 16 MiB in all, bounded as it is) lists its files' suspects whole, where a heap per
# file took 500 MB more.
SUSPECTS_JUDGED = 500_000
SUSPECT_EMPTY, SUSPECT_TIMED, SUSPECT_UNTIMED = _EMPTY_BIT, _TIMED_BIT, _UNTIMED_BIT

# A line that lists deprecated headers ranks before every WARN naming one: one pick, not
# a pick of each kind. Row numbers stay far below it (a file of 2**40 lines).
_UNLISTED = 1 << 40

# `span_sql.LAST_ID_ORDER` (time, then line) as one number, row numbers staying below 2**40:
# a struct key cost 10 % more CPU per file. A span's lines all have a time; a suspect
# line (no time, perhaps) is a group of its own, whose one id is kept whatever its key.
_LAST_ID_KEY = f"coalesce(epoch_us(time)::HUGEINT, 0) * {_UNLISTED} + rn"


def _has(bit: int) -> str:
    return f"(bit_or(_bits) & {bit}) <> 0"


# A refused chunk naming no id the frontend could write is logged without
# `chunk_request_id`: as no value, the span's foreign column stayed null and the refusal
# was no finding ("No findings", exit 0). An empty id, which no written one is.
_FOREIGN_ID = "coalesce(chunk_request_id, '')"


def _first_where(flag: str, value: str, name: str, row: str) -> str:
    """The value on the span's first line where `flag` holds, and that line's row."""
    # arg_min skips null values: a CASE feeds it only the flagged lines, which costs
    # less than a FILTER clause per aggregate.
    return (f"arg_min(CASE WHEN {flag} THEN {value} END, rn) AS {name}, "
            f"min(CASE WHEN {flag} THEN rn END) AS {row}")


def _earliest_where(flag: str, value: str, name: str, row: str) -> str:
    """`_first_where` by time, then line: a span's first Unlinked error in time names it,
    in a log printed newest first too (the later "Unlinked response" was named). Lines
    of no span (the row a file's note names, `reading.unkeyed`) by line alone: the note
    names the first such line, as the Dask engine's blocks and the follower's chunks,
    each naming its own first, make it; by time, a file whose clock stepped back named
    another line in each."""
    key = f"CASE WHEN {flag} THEN (CASE WHEN _span IS NULL THEN rn ELSE {_LAST_ID_KEY} END) END"
    return (f"arg_min(CASE WHEN {flag} THEN {value} END, {key}) AS {name}, "
            f"arg_min(CASE WHEN {flag} THEN rn END, {key}) AS {row}")


def lean_spans_sql(source: str, *, by_file: bool = False) -> str:
    """Per-span rows of `source` (`scan.source_sql`, lean), and one row of its suspect lines.

    Columns as `span_sql.span_aggregates` gives them (display fields null), plus ``_kind``,
    ``span_key`` and the flags `LogTable.spans` judges suspect lines by. ``by_file``: the
    source is several files (its ``_file`` column), each grouped apart and said by ``_file``.
    """
    file = ", _file" if by_file else ""
    packed = f"rn * {SUSPECT_PACK} + _bits"
    suspects = f"list({packed})" if by_file else f"min({packed}, {SUSPECTS_JUDGED})"
    display = ", ".join(f"NULL::VARCHAR AS {c}" for c in DISPLAY_FIELDS)
    # First non-null by line: arg_min skips the lines where the value is null.
    first = ", ".join(
        f"arg_min({c}, rn) AS {c}"
        for c in ("parent_span_id", "x_request_id", "outcome", "fp_in", "fp_out")
    )
    return f"""
SELECT CASE WHEN _row IS NOT NULL THEN {SUSPECT} WHEN _span IS NOT NULL THEN {SPAN}
            ELSE {OTHER} END::TINYINT AS _kind,
    _trace AS trace_id, _span AS span_id, hash(_trace, _span) AS span_key,
    arg_max(request_id, {_LAST_ID_KEY}) AS request_id, {first}, {display},
    CASE WHEN {_has(_WORKER_BIT)} THEN {literal(WORKER)} ELSE {literal(FRONTEND)} END AS side,
    CASE WHEN {_has(_STARTED_BIT)} THEN min(time) ELSE min(_began) END AS start,
    max(time) AS "end", min(time) AS first_time, min(_answer_us) AS answer_us,
    min(rn) AS first_rn, max(rn) AS last_rn, count(*) AS lines,
    {_earliest_where("_unlinked", "_text", "unlinked", "unlinked_rn")},
    {_first_where("_foreign", _FOREIGN_ID, '"foreign"', "foreign_rn")},
    {with_every_header("arg_min(deprecated, _deprecated_rank)",
                       f"(bit_or(_bits) >> {_HEADER_SHIFT}) & {_HEADER_MASK}")} AS deprecated,
    min(_deprecated_rank) % {_UNLISTED} AS deprecated_rn,
    coalesce(min(_deprecated_rank) < {_UNLISTED}, FALSE) AS deprecated_listed,
    {_has(_CLOSING_BIT)} AS closing, {_has(_REQUEST_END_BIT)} AS request_end,
    {_has(_WORKER_END_BIT)} AS worker_end, {_has(_STARTED_BIT)} AS started,
    {_has(_INNER_BIT)} AS inner, {_has(_OUTER_BIT)} AS outer,
    {_has(_EMPTY_BIT)} AS _empty, {_has(_TIMED_BIT)} AS _timed,
    {_has(_UNTIMED_BIT)} AS _untimed, count(*) FILTER (WHERE _in_window) AS _window,
    {suspects} FILTER (WHERE _row IS NOT NULL) AS _suspects{file}
FROM (
    SELECT *, {_BITS} AS _bits,
        CASE WHEN deprecated IS NOT NULL THEN rn + CASE WHEN _listed THEN 0
             ELSE {_UNLISTED} END END AS _deprecated_rank,
        CASE _kind WHEN {SUSPECT} THEN 0 END AS _row,
        CASE _kind WHEN {SPAN} THEN trace_id END AS _trace,
        CASE _kind WHEN {SPAN} THEN span_id END AS _span
    FROM (SELECT {_LINE}{file} FROM (SELECT *, {_KEYED} AS _keyed FROM ({source})))
)
GROUP BY _row, _trace, _span{file}
"""
