"""The per-file scan DuckDB runs: which lines a read keeps, numbered, with their flags.

DuckDB's reader yields exactly one row per non-blank line, in file order, and an empty
row for a line it cannot parse; ``rn`` numbers them. The scan keeps the lines a finding
can use ("evidence": lifecycle events, Dynamo's request messages, fingerprints,
deprecated headers, Unlinked errors), every line that is no valid log record (judged
in Python later) and, for a --since/--until window, the lines in it.
"""

from __future__ import annotations

from typing import Any, Protocol

from ridtrace.contract import (
    DEPRECATED_HEADER,
    DISPATCH_EVENT_PREFIX,
    DURATION_MS,
    DYNAMO_LATENCY_MS,
    DYNAMO_SENT_ID_FIELD,
    DYNAMO_SPAN_DURATION_US,
    LOG_SCHEMA,
)
from ridtrace.forensics.reading.hex_ids import hex_id
from ridtrace.forensics.reading.lean import LINE_TERMS, OTHER, SPAN, SUSPECT
from ridtrace.forensics.reading.lines import MAX_LINE_BYTES
from ridtrace.forensics.reading.other_loggers import (
    OTHER_EPOCH_TIME,
    OTHER_LOGGER,
    OTHER_TIME_TEXT,
    SHOWN_LEVEL,
    SHOWN_MESSAGE,
    SIGNATURE_FIELDS,
    UNMARKED,
    other_logger_record,
    structlog_record,
)
from ridtrace.forensics.reading.schema import READ_FIELDS
from ridtrace.forensics.reading.span_sql import span_aggregates
from ridtrace.forensics.reading.sql import (
    DYNAMO_EVIDENCE_MESSAGES,
    DYNAMO_LINE,
    STRUCTLOG,
    literal,
    normalized_select,
)

# What `analyze` needs; display-only fields (level, route, client, …) stay null.
LEAN_FIELDS: tuple[str, ...] = (
    "time", "schema", "target", "event", "message", "request_id", "x_request_id",
    "trace_id", "span_id", "parent_span_id", "parent_id", "span_name", "status", "outcome",
    "fp_in", "fp_out", "deprecated_headers", "header", "error", "chunk_request_id",
    DYNAMO_SENT_ID_FIELD, DYNAMO_LATENCY_MS, DYNAMO_SPAN_DURATION_US, DURATION_MS, "timestamp",
)
# DuckDB reads every line up to this size; a longer one is a bad line (`reading.overlong`).
MAX_OBJECT_BYTES = MAX_LINE_BYTES

Window = tuple[int | None, int | None]  # [since, until) in epoch µs


class Instant(Protocol):
    """A point in time with ``value`` in epoch nanoseconds (`pandas.Timestamp`)."""

    @property
    def value(self) -> int: ...


def to_window(since: Instant | None, until: Instant | None) -> Window | None:
    """A --since/--until pair as epoch µs bounds (None when neither is set).

    Typed by what it reads, so the read path imports no pandas (see `records.read`).
    """
    if since is None and until is None:
        return None
    return (
        None if since is None else since.value // 1000,
        None if until is None else until.value // 1000,
    )


# The SQL twin of the lines a rule can use; everything else only needs counting. A
# frontend's dispatch lines are a caller's lifecycle too: under the legacy id policy they
# name the client's id the caller held after its `request.start` named a minted one, and
# a caller whose frontend was killed has no later line to say so.
_EVIDENCE = f"""(
    starts_with(event, 'request.') OR starts_with(event, 'worker.')
    OR starts_with(event, {literal(DISPATCH_EVENT_PREFIX)})
    OR starts_with(event, 'response.') OR starts_with(event, 'stream.')
    OR event = {literal(DEPRECATED_HEADER)}
    OR fp_in IS NOT NULL OR fp_out IS NOT NULL OR deprecated_headers IS NOT NULL
    OR header IS NOT NULL OR chunk_request_id IS NOT NULL
)"""
# Dynamo's evidence is in its messages' text. On a ridtrace line only its event says:
# an application's own line quoting the Unlinked error made its span a request (a log
# with no lifecycle line read as holding one, not as "no request found").
_DYNAMO_EVIDENCE = f"""(
    message IN ({", ".join(literal(m) for m in DYNAMO_EVIDENCE_MESSAGES)})
    OR contains(error, 'Unlinked re') OR contains(message, 'Unlinked re')
    OR contains(message, 'header is deprecated')
)"""
_KNOWN = (f"(schema = {literal(LOG_SCHEMA)} OR (schema IS NULL AND target IS NOT NULL) "
          f"OR {STRUCTLOG} OR {OTHER_LOGGER})")
# Only a line with neither mark looks further: ridtrace's and Dynamo's pay one test.
_TIME = (f'coalesce("time", CASE WHEN {UNMARKED} THEN '
         f'CASE WHEN {STRUCTLOG} THEN "timestamp" ELSE {OTHER_TIME_TEXT} END END)')
# DuckDB's cast takes years RFC 3339 has no room for: five digits (12026) or negative
# (BC). `record_time.parse_time` takes neither, so the two sides of the read disagreed,
# and a torn or forged year stretched a report's times over thousands of years. Only a
# four-digit year is cast; any other is no time, and Python judges the line ("invalid
# time"). A test of the text, so that such a line's `_t` is null: its flags then say
# "untimed", which is what sends it to Python whole. Year 0000 too: DuckDB reads it as
# 1 BC (a request shown starting then), Python as no time. So are the first and last
# days RFC 3339 can write: their UTC may be out of its years (9999-12-31T23:00-05:00 is
# in year 10000, 0001-01-01T00:00+01:00 in year 0), which DuckDB casts and Python
# refuses; a request logged then was shown in year 10000 and audited in 1972.
# DuckDB's cast also takes an hour 24 (`T24:00:00Z`, the next midnight) and offsets
# of 24 hours and more (`+99:99`, four days off; `+23:60`), which RFC 3339 has no room
# for and Python refuses: a forged line was moved days from its request, read as good.
# Those go to Python's judge too ("invalid time"). The offset is what the cast applied,
# whatever its spelling (a time without seconds put it where a fixed place missed it):
# the wall time read without it less the instant. A line ending `Z` (ridtrace's,
# Dynamo's) pays one test for it.
_DAY_US = 86_400_000_000
_CASTABLE = (f"substr({_TIME}, 12, 2) <> '24' AND CASE WHEN ends_with({_TIME}, 'Z') THEN TRUE "
             f"ELSE coalesce(abs(epoch_us(TRY_CAST({_TIME} AS TIMESTAMP)) "
             f"- epoch_us(TRY_CAST({_TIME} AS TIMESTAMPTZ))) < {_DAY_US}, TRUE) END")
# An epoch number is a time only where the logger's signature states its unit.
_T = (f"coalesce(TRY_CAST(CASE WHEN substr({_TIME}, 5, 1) = '-' "
      f"AND NOT starts_with({_TIME}, '-') AND NOT starts_with({_TIME}, '0000') "
      f"AND NOT starts_with({_TIME}, '9999-12-31') AND NOT starts_with({_TIME}, '0001-01-01') "
      f"AND {_CASTABLE} THEN {_TIME} END AS TIMESTAMPTZ), "
      f"CASE WHEN {UNMARKED} THEN {OTHER_EPOCH_TIME} END)")
# Evidence only on ridtrace's and Dynamo's lines: an application's structlog line or
# another logger's is none, whatever its message or error says (a suspect line is
# kept and judged anyway, evidence or not).
_MARKED = f"(schema = {literal(LOG_SCHEMA)} OR {DYNAMO_LINE})"
# A line the lean read keeps for the rules, over its raw fields (a line judged in Python
# is kept by the same test: `table.LogTable._normalize_rows`).
LEAN_EVIDENCE = f"(({_EVIDENCE} AND {_MARKED}) OR ({_DYNAMO_EVIDENCE} AND {DYNAMO_LINE}))"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _window_sql(window: Window) -> str:
    since, until = window
    span = ["TRUE"]
    if since is not None:
        span.append(f"_t >= make_timestamptz({int(since)}::BIGINT)")
    if until is not None:
        span.append(f"_t < make_timestamptz({int(until)}::BIGINT)")
    return "(" + " AND ".join(span) + ")"


def source_sql(path: str, *, lean: bool, window: Window | None, several: bool = False) -> str:
    """Kept lines of the file: ``rn``, ``_t``, every raw field (null where not read), flags.

    The file is plain text by now (`reading.files` decodes every compression itself):
    ``compression = 'uncompressed'`` keeps DuckDB from guessing one from the name, as it
    did for plain text named ``.gz`` (DuckDB 1.x refuses the spelling ``'none'``).

    `several`: `path` is several files copied end to end (`reading.small_files`), and
    the parameter ``$ends`` lists the last row of each; ``_file`` says whose row it is
    (its index), and every row is kept, so each file's first row and row count come out
    of its per-span groups. The ends are a parameter, not text: the query is then
    prepared once per reading thread (`connection.PreparedReads`), and planning it was
    ~40 % of a batch's read.
    """
    file_of_row = f", {_FILE_OF_ROW} AS _file" if several else ""
    fields = LEAN_FIELDS if lean else READ_FIELDS
    # Read for the signatures, not passed on (`raw` holds READ_FIELDS only).
    fields = (*fields, *(f for f in SIGNATURE_FIELDS if f not in fields))
    columns = ", ".join(f"{literal(f)}: 'VARCHAR'" for f in fields)
    # A full read is for the event views: another logger's text and level as shown.
    shown = {} if lean else {"message": SHOWN_MESSAGE, "level": SHOWN_LEVEL}
    raw = ", ".join(
        (f"{shown[f]} AS {_quote(f)}" if f in shown
         else _quote(f) if f in fields else f"NULL::VARCHAR AS {_quote(f)}")
        for f in READ_FIELDS if f != "time"
    )
    empty = " AND ".join(f"{_quote(f)} IS NULL" for f in fields)
    keep = "TRUE"
    if lean and not several:
        keep = "_ev OR _suspect"
        if window is not None:
            keep += f" OR {_window_sql(window)}"
    # Judged on a full read too: only such a line makes or times a request, on every
    # path (`full_spans_sql`, `span_sql.spans_select` over its `evidence`).
    evidence = LEAN_EVIDENCE
    in_window = _window_sql(window) if window is not None else "FALSE"
    # Every per-line term is computed below the numbering, where DuckDB computes it once
    # (see `lean.LINE_TERMS`); above it, a term used twice was computed twice.
    terms = "".join(f", {sql} AS {name}" for name, sql in LINE_TERMS.items()) if lean else ""
    return f"""
SELECT *, {in_window} AND NOT _suspect AS _in_window FROM (
    SELECT *, (_t IS NULL OR NOT _known OR _empty) AS _suspect{file_of_row}
    FROM (SELECT row_number() OVER () AS rn, * FROM (
        SELECT {_T} AS _t,
            {_TIME} AS _time_text, {raw},
            {_KNOWN} IS TRUE AS _known, ({empty}) AS _empty, {evidence} IS TRUE AS _ev{terms}
        FROM read_json({literal(path)}, format = 'newline_delimited', ignore_errors = true,
                       compression = 'uncompressed', maximum_object_size = {MAX_OBJECT_BYTES},
                       columns = {{{columns}}})
    ))
) WHERE {keep}
"""


FLAGS = ("_suspect", "_ev", "_in_window", "_empty", "_time_text")

# Whose row ``rn`` is, of files whose last rows are ``$ends`` (ascending): how many end
# before it. Past the last end it is the count of files, a file that does not exist.
_FILE_OF_ROW = "len(list_filter($ends, lambda e: e < rn))::INTEGER"


def full_spans_sql(source: str) -> str:
    """Per-span rows of every line of `source` (a full read: display fields too).

    Kinds numbered as `lean.lean_spans_sql` numbers them; each suspect line its own row.
    A span groups on its ids spelt one way and shows its first line's spelling, as
    `span_sql.spans_select` (which rebuilds a file's spans when a suspect line is rescued).
    """
    events = normalized_select(f"({source})", keep=FLAGS)
    return f"""
SELECT _kind, CASE WHEN _kind = {SPAN} THEN arg_min(trace_id, rn) END AS trace_id,
    CASE WHEN _kind = {SPAN} THEN arg_min(span_id, rn) ELSE _g2 END AS span_id,
    hash(_g1, _g2) AS span_key,
    {span_aggregates()},
    bool_or(_empty) AS _empty, bool_or(_time_text IS NOT NULL) AS _timed,
    bool_or(time IS NULL) AS _untimed, count(*) FILTER (WHERE _in_window) AS _window
FROM (
    SELECT *,
        CASE WHEN _kind = {SPAN} THEN {hex_id("trace_id", trace=True)} END AS _g1,
        CASE WHEN _kind = {SPAN} THEN {hex_id("span_id")}
             WHEN _kind = {SUSPECT} THEN rn::VARCHAR END AS _g2
    FROM (
        SELECT *, CASE WHEN _suspect THEN {SUSPECT} WHEN NOT _ev OR span_id IS NULL
                       THEN {OTHER} ELSE {SPAN} END::TINYINT AS _kind
        FROM ({events})
    )
)
GROUP BY _kind, _g1, _g2
"""


def known_record(row: dict[str, Any]) -> bool:
    """Whether a parsed line is a log record of a known format (`_KNOWN`'s Python twin)."""
    return row.get("schema") == LOG_SCHEMA or (
        row.get("schema") is None and row.get("target") is not None
    ) or structlog_record(row) or other_logger_record(row)
