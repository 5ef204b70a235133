"""One log file read by DuckDB in one streaming pass: events, or per-span records.

DuckDB's reader yields exactly one row per non-blank line, in file order, and an
empty row for a line it cannot parse; `ridtrace.forensics.reading.lines` turns row
numbers (``rn``) into file lines. A pass keeps the lines a finding can use
("evidence": lifecycle events, Dynamo's request messages, fingerprints, deprecated
headers, Unlinked errors), every line that is no valid log record (judged in Python:
the reason of a bad line, or the row of valid JSON that DuckDB rejected) and, for a
--since/--until window, the lines in it.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ridtrace.contract import DEPRECATED_HEADER, LOG_SCHEMA
from ridtrace.forensics.reading.judge import judge_line
from ridtrace.forensics.reading.lean import OTHER, SPAN, SUSPECT, lean_spans_sql
from ridtrace.forensics.reading.lines import LineMap
from ridtrace.forensics.reading.overlong import (
    LONG_LINE_REASON,
    MAX_LINE_BYTES,
    copy_without,
    is_object_size_error,
    long_lines,
    without_long_lines,
)
from ridtrace.forensics.reading.schema import READ_FIELDS, TIME_TYPE
from ridtrace.forensics.reading.sql import (
    DYNAMO_EVIDENCE_MESSAGES,
    literal,
    normalized_select,
    span_aggregates,
    spans_select,
)
from ridtrace.forensics.reading.staging import make_dir, release
from ridtrace.forensics.reading.stats import ReadStats

# What `analyze` needs; display-only fields (level, route, client, …) stay null.
LEAN_FIELDS: tuple[str, ...] = (
    "time", "schema", "target", "event", "message", "request_id", "x_request_id",
    "trace_id", "span_id", "parent_span_id", "parent_id", "span_name", "status", "outcome",
    "fp_in", "fp_out", "deprecated_headers", "header", "error", "chunk_request_id",
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


# The SQL twin of the lines a rule can use; everything else only needs counting.
_EVIDENCE = f"""(
    starts_with(event, 'request.') OR starts_with(event, 'worker.')
    OR starts_with(event, 'response.') OR starts_with(event, 'stream.')
    OR event = {literal(DEPRECATED_HEADER)}
    OR message IN ({", ".join(literal(m) for m in DYNAMO_EVIDENCE_MESSAGES)})
    OR fp_in IS NOT NULL OR fp_out IS NOT NULL OR deprecated_headers IS NOT NULL
    OR header IS NOT NULL OR chunk_request_id IS NOT NULL
    OR contains(error, 'Unlinked re') OR contains(message, 'header is deprecated')
)"""
_KNOWN = f"(schema = {literal(LOG_SCHEMA)} OR (schema IS NULL AND target IS NOT NULL))"


def connect() -> duckdb.DuckDBPyConnection:
    """A connection set up for reading logs: UTC times, no progress bar, and as many
    threads as the CPUs this process may run on."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET enable_progress_bar = false")
    con.execute(f"SET threads = {usable_cpus()}")
    return con


def usable_cpus() -> int:
    """CPUs this process may run on: its affinity (taskset, a container's cpuset).

    DuckDB starts one thread per CPU of the machine; a process pinned to fewer CPUs
    (a follower given one core, a container) would time-slice its own threads.
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity API on this platform
        return max(1, os.cpu_count() or 1)


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


class PreparedReads:
    """Per-file queries prepared once on a cursor, the file a parameter.

    A file's query differs from the next file's only by its path, and DuckDB's parser
    took about half of a small file's 12 ms read (a directory of thousands of small
    pod logs). Prepared with the path as ``$path``, each file costs its bind and its run.
    A cursor runs one query at a time: one of these per reading thread.
    """

    # Texts prepared at most (lean, full, a window each): any more run unprepared.
    MAX_PREPARED = 8

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con
        self._names: dict[str, str] = {}

    def arrow(self, sql: str, path: str) -> pa.Table:
        """`sql` (which reads `path` once, through ``read_json``) as an Arrow table."""
        marker = f"read_json({literal(path)}, "
        if sql.count(marker) != 1:
            return self._con.sql(sql).to_arrow_table()
        text = sql.replace(marker, "read_json($path, ")
        name = self._names.get(text)
        if name is None:
            if len(self._names) >= self.MAX_PREPARED:
                return self._con.sql(sql).to_arrow_table()
            name = f"ridtrace_read_{len(self._names)}"
            self._con.execute(f"PREPARE {name} AS {text}")
            self._names[text] = name
        return self._con.sql(f"EXECUTE {name}(path := {literal(path)})").to_arrow_table()


def _source_sql(path: str, *, lean: bool, window: Window | None) -> str:
    """Kept lines of the file: ``rn``, ``_t``, every raw field (null where not read), flags.

    The file is plain text by now (`reading.files` decodes every compression itself):
    ``compression = 'none'`` keeps DuckDB from guessing one from the name, as it did for
    plain text named ``.gz``.
    """
    fields = LEAN_FIELDS if lean else READ_FIELDS
    columns = ", ".join(f"{literal(f)}: 'VARCHAR'" for f in fields)
    raw = ", ".join(
        (_quote(f) if f in fields else f"NULL::VARCHAR AS {_quote(f)}")
        for f in READ_FIELDS if f != "time"
    )
    empty = " AND ".join(f"{_quote(f)} IS NULL" for f in fields)
    keep = "TRUE"
    if lean:
        keep = "_ev OR _suspect"
        if window is not None:
            keep += f" OR {_window_sql(window)}"
    evidence = _EVIDENCE if lean else "TRUE"
    in_window = _window_sql(window) if window is not None else "FALSE"
    return f"""
SELECT *, {in_window} AND NOT _suspect AS _in_window FROM (
    SELECT *, (_t IS NULL OR NOT _known OR _empty) AS _suspect FROM (
        SELECT row_number() OVER () AS rn, TRY_CAST("time" AS TIMESTAMPTZ) AS _t,
            "time" AS _time_text, {raw},
            {_KNOWN} IS TRUE AS _known, ({empty}) AS _empty, {evidence} IS TRUE AS _ev
        FROM read_json({literal(path)}, format = 'newline_delimited', ignore_errors = true,
                       compression = 'none', maximum_object_size = {MAX_OBJECT_BYTES},
                       columns = {{{columns}}})
    )
) WHERE {keep}
"""


_FLAGS = ("_suspect", "_ev", "_in_window", "_empty", "_time_text")


def _spans_sql(source: str) -> str:
    """Per-span rows of every line of `source` (a full read: display fields too).

    Kinds numbered as `lean.lean_spans_sql` numbers them; each suspect line its own row.
    """
    events = normalized_select(f"({source})", keep=_FLAGS)
    return f"""
SELECT _kind, _g1 AS trace_id, _g2 AS span_id, hash(_g1, _g2) AS span_key,
    {span_aggregates()},
    bool_or(_empty) AS _empty, bool_or(_time_text IS NOT NULL) AS _timed,
    bool_or(time IS NULL) AS _untimed, count(*) FILTER (WHERE _in_window) AS _window
FROM (
    SELECT *,
        CASE WHEN _kind = {SPAN} THEN trace_id END AS _g1,
        CASE WHEN _kind = {SPAN} THEN span_id WHEN _kind = {SUSPECT} THEN rn::VARCHAR END AS _g2
    FROM (
        SELECT *, CASE WHEN _suspect THEN {SUSPECT} WHEN NOT _ev OR span_id IS NULL
                       THEN {OTHER} ELSE {SPAN} END::TINYINT AS _kind
        FROM ({events})
    )
)
GROUP BY _kind, _g1, _g2
"""


def _known(row: dict[str, Any]) -> bool:
    return row.get("schema") == LOG_SCHEMA or (
        row.get("schema") is None and row.get("target") is not None
    )


class LogTable:
    """One plain log file read by DuckDB: as per-span rows or as ordered events.

    Each is one streaming pass over the file; the few suspect lines come out with
    their flags and are judged in Python (`ridtrace.forensics.reading.judge`). A file
    with a line too long for DuckDB is read from a copy without it
    (`ridtrace.forensics.reading.overlong`), that line counted as bad.
    """

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        path: str,
        line_map_of: Callable[[], LineMap],
        fetch: Callable[[Iterable[int]], dict[int, bytes]],
        *,
        name: str,
        stats: ReadStats,
        lean: bool,
        window: Window | None = None,
        run: Callable[[str], pa.Table] | None = None,
    ) -> None:
        self.con, self.path, self.name, self.lean = con, path, name, lean
        self._line_map_of, self._fetch, self.stats, self.window = line_map_of, fetch, stats, window
        # How the per-span query runs: as given, or prepared once by a caller that runs
        # the same text again and again (`PreparedReads`).
        self._run = run or self._sql
        self.fields = LEAN_FIELDS if lean else READ_FIELDS
        self.window_lines = 0
        self._line_map: LineMap | None = None
        # While a query method runs on a file with over-long lines: the copy DuckDB reads
        # instead, and those lines, counted as bad in file order with the judged ones.
        self._copy: Path | None = None
        self._long_bad: list[tuple[int, str]] = []

    @property
    def line_map(self) -> LineMap:
        """The file's line structure (numbered on another thread while DuckDB parsed)."""
        if self._line_map is None:
            self._line_map = self._line_map_of()
            self.stats.count_lines(self.name, self._line_map.nonblank)
        return self._line_map

    def _sql(self, sql: str) -> pa.Table:
        return self.con.sql(sql).to_arrow_table()

    def _source(self, path: str) -> str:
        return _source_sql(path, lean=self.lean, window=self.window)

    def _read(self, query: Callable[[str], str], run: Callable[[str], pa.Table]) -> pa.Table:
        """`query` over the kept lines of the file, or of a copy without its over-long lines.

        The check after a read that worked costs a look at the line map's block sizes:
        DuckDB may read a line over its limit at one offset and fail on it at another.
        """
        if self._copy is not None:
            return self._sql(query(self._source(str(self._copy))))
        try:
            got = run(query(self._source(self.path)))
        except duckdb.InvalidInputException as exc:
            if not is_object_size_error(exc):
                raise
            long = long_lines(self.path, self.line_map)
            if not long:  # no line over the limit after all: DuckDB's error stands
                raise
        else:
            long = long_lines(self.path, self.line_map)
            if not long:
                return got
        self._copy = make_dir("ridtrace-long-lines-") / "copy.jsonl"
        with open(self._copy, "wb") as out:
            copy_without(self.path, out, long)
        # The map counted the lines already (they are lines read); now they are blank rows.
        self._line_map = without_long_lines(self.line_map, long)
        self._long_bad = [(x.line, LONG_LINE_REASON) for x in long]
        # Not prepared: the copy's path is new, the prepared text would not be run again.
        return self._sql(query(self._source(str(self._copy))))

    def _drop_copy(self) -> None:
        if self._copy is not None:
            release(self._copy.parent)
            self._copy = None

    def _count_bad(self, judged: list[tuple[int, str]]) -> None:
        """Bad lines into the stats, in file order: those judged and the over-long ones."""
        for line, reason in heapq.merge(judged, self._long_bad):
            self.stats.bad(self.name, line, reason)
        self._long_bad = []

    def _judge(self, rn: np.ndarray, empty: np.ndarray, timed: np.ndarray,
               untimed: np.ndarray) -> tuple[list[dict[str, Any]], list[tuple[int, str]]]:
        """Valid JSON that DuckDB rejected, as rows; and the bad lines with their reasons."""
        lines = self.line_map.row_lines(rn.astype(np.int64))
        # DuckDB gave no row, or took no time Python's ISO parser may take: judge it whole.
        whole = empty | (untimed & timed)
        texts = self._fetch(int(x) for x in lines[whole])
        rescued: list[dict[str, Any]] = []
        bad: list[tuple[int, str]] = []
        for i, line in enumerate(lines.tolist()):
            if not whole[i]:
                bad.append((line, "missing time" if untimed[i] else "unknown format"))
                continue
            verdict = judge_line(texts.get(line, b""), self.fields)
            if isinstance(verdict, str):
                bad.append((line, verdict))
            elif not _known(verdict):
                bad.append((line, "unknown format"))
            else:
                verdict["rn"] = int(rn[i])
                verdict["_t"] = verdict.pop("time")
                rescued.append(verdict)
        return rescued, bad

    def spans(self) -> tuple[pa.Table, dict[str, np.ndarray]]:
        """One row per span (first-seen order), and its evidence lines by column."""
        try:
            return self._spans()
        finally:
            self._drop_copy()

    def _spans(self) -> tuple[pa.Table, dict[str, np.ndarray]]:
        got = self._read(lean_spans_sql if self.lean else _spans_sql, self._run)
        # First-seen order: sorting the few span rows here beats an ORDER BY in the plan.
        # The order is applied once, by the one `take` that also keeps the span rows.
        order = np.argsort(got["first_rn"].to_numpy(), kind="stable")
        kind = got["_kind"].to_numpy()[order]
        self.window_lines = int(pc.sum(got["_window"]).as_py() or 0)
        bad = kind == SUSPECT
        rescued: list[dict[str, Any]] = []
        judged: list[tuple[int, str]] = []
        if bad.any():
            flags = got.take(pa.array(order[bad]))
            rescued, judged = self._judge(
                flags["first_rn"].to_numpy(), *(
                    flags[c].to_numpy(zero_copy_only=False)
                    for c in ("_empty", "_timed", "_untimed")
                ),
            )
        self._count_bad(judged)
        if rescued:  # rare: rebuild from ordered events, the rescued rows in their place
            events = self._events_with(rescued)
            self.con.register("ridtrace_events", events)
            try:
                got = self.con.sql(spans_select("ridtrace_events")).to_arrow_table()
            finally:
                self.con.unregister("ridtrace_events")
        else:
            rows = [f"{c}_rn" for c in _LINE_KINDS]
            got = got.select([*_span_fields(got), *rows]).take(pa.array(order[kind == SPAN]))
        lines = {f"{c}_line": self._lines_of(got[f"{c}_rn"]) for c in _LINE_KINDS}
        return got.select(_span_fields(got)), lines

    def _ordered_events(self) -> pa.Table:
        return self._read(
            lambda source: normalized_select(f"({source})", keep=_FLAGS) + " ORDER BY rn",
            self._sql,
        )

    def _events_with(self, rescued: list[dict[str, Any]]) -> pa.Table:
        got = self._ordered_events()
        good = got.filter(pc.invert(got["_suspect"]))
        if self.lean:
            good = good.filter(good["_ev"])
        extra = self._normalize_rows(rescued)
        merged = pa.concat_tables([good.select(extra.column_names), extra])
        return merged.sort_by("rn")

    def _normalize_rows(self, rows: list[dict[str, Any]]) -> pa.Table:
        schema = pa.schema(
            [pa.field("rn", pa.int64()), pa.field("_t", TIME_TYPE)]
            + [pa.field(f, pa.string()) for f in READ_FIELDS if f != "time"]
        )
        table = pa.Table.from_pylist(rows, schema=schema)
        self.con.register("ridtrace_rescued", table)
        try:
            return self.con.sql(normalized_select("ridtrace_rescued")).to_arrow_table()
        finally:
            self.con.unregister("ridtrace_rescued")

    def events(self) -> tuple[pa.Table, np.ndarray]:
        """Normalised event rows in file order, and their line numbers."""
        try:
            return self._events()
        finally:
            self._drop_copy()

    def _events(self) -> tuple[pa.Table, np.ndarray]:
        got = self._ordered_events()
        self.window_lines = int(pc.sum(got["_in_window"]).as_py() or 0)
        suspect = got["_suspect"].to_numpy(zero_copy_only=False)
        rescued: list[dict[str, Any]] = []
        judged: list[tuple[int, str]] = []
        if suspect.any():
            flags = got.filter(got["_suspect"])
            rescued, judged = self._judge(
                flags["rn"].to_numpy(),
                flags["_empty"].to_numpy(zero_copy_only=False),
                pc.is_valid(flags["_time_text"]).to_numpy(zero_copy_only=False),
                pc.is_null(flags["time"]).to_numpy(zero_copy_only=False),
            )
        self._count_bad(judged)
        good = got.filter(pc.invert(got["_suspect"]))
        if self.lean:
            good = good.filter(good["_ev"])
        if rescued:
            extra = self._normalize_rows(rescued)
            good = pa.concat_tables([good.select(extra.column_names), extra]).sort_by("rn")
        lines = self.line_map.row_lines(good["rn"].to_numpy())
        drop = [c for c in good.column_names if c == "rn" or c.startswith("_")]
        return good.drop_columns(drop), lines

    def _lines_of(self, rn: pa.ChunkedArray) -> np.ndarray:
        values = rn.to_numpy(zero_copy_only=False)
        if rn.null_count == 0:
            return self.line_map.row_lines(values.astype(np.int64))
        present = ~np.isnan(values)
        out = np.full(len(values), -1, dtype=np.int64)
        out[present] = self.line_map.row_lines(values[present].astype(np.int64))
        return out


_LINE_KINDS = ("first", "last", "unlinked", "foreign", "deprecated")


def _span_fields(spans: pa.Table) -> list[str]:
    """The columns a span row keeps: not its row numbers, not the read's own flags."""
    return [c for c in spans.column_names if not c.endswith("_rn") and not c.startswith("_")]
