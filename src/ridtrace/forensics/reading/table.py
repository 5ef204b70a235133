"""One log file read by DuckDB in one streaming pass: events, or per-span records.

The pass is `reading.scan`'s, numbered lines and their flags; `reading.lines` turns row
numbers (``rn``) into file lines. The few lines that are no valid log record are judged
in Python (`reading.suspects`): the reason of a bad line, or the row of valid JSON that
DuckDB rejected.
"""

from __future__ import annotations

import bisect
import functools
import heapq
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ridtrace.forensics.reading.connection import arrow_table
from ridtrace.forensics.reading.lean import OTHER, SPAN, SUSPECT, lean_spans_sql
from ridtrace.forensics.reading.lines import LineMap
from ridtrace.forensics.reading.other_loggers import show_as_logged
from ridtrace.forensics.reading.overlong import (
    CHANGED_WHILE_READ,
    ChangedWhileRead,
    LongLine,
    after_hole,
    is_object_size_error,
    long_lines,
    set_aside,
)
from ridtrace.forensics.reading.scan import (
    FLAGS,
    LEAN_EVIDENCE,
    LEAN_FIELDS,
    Window,
    full_spans_sql,
    source_sql,
)
from ridtrace.forensics.reading.schema import READ_FIELDS, TIME_TYPE
from ridtrace.forensics.reading.span_sql import spans_select
from ridtrace.forensics.reading.sql import normalized_select
from ridtrace.forensics.reading.staging import release
from ridtrace.forensics.reading.stats import ReadStats
from ridtrace.forensics.reading.suspects import (
    count_unjudged,
    judge_in_slices,
    judge_suspects,
    suspect_lines,
)
from ridtrace.forensics.reading.unkeyed import (
    UNKEYED_KINDS,
    unkeyed_events_notes,
    unkeyed_notes,
)


class Answer:
    """A query hook (`LogTable`'s ``run``, ``events_run``) that answers with rows already
    read: a file's part of a batch of small files read as one (`small_files`)."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def __call__(self, _sql: str) -> pa.Table:
        return self.table


class LogTable:
    """One plain log file read by DuckDB: as per-span rows or as ordered events.

    Each is one streaming pass over the file; the few suspect lines come out with
    their flags and are judged in Python (`ridtrace.forensics.reading.suspects`). A file
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
        starts_file: bool = True,
        remap: Callable[[], LineMap] | None = None,
        events_run: Callable[[str], pa.Table] | None = None,
    ) -> None:
        self.con, self.path, self.name, self.lean = con, path, name, lean
        # Whether line 1 is the file's own first line (not a later Dask block's).
        self.starts_file = starts_file
        self._line_map_of, self._fetch, self.stats, self.window = line_map_of, fetch, stats, window
        # How the per-span query runs: as given, or prepared once by a caller that runs
        # the same text again and again (`PreparedReads`).
        self._run = run or self._sql
        # How `events` runs its query: as given, or answered from a batch of small files
        # read as one (`small_files.batch_events`).
        self._events_run = events_run or self._sql
        self.fields = LEAN_FIELDS if lean else READ_FIELDS
        self.window_lines = 0
        self._line_map: LineMap | None = None
        self._remap = remap  # numbers the file's lines again (`_row_lines`)
        # While a query method runs on a file with over-long lines: the copy DuckDB reads
        # instead, and those lines, counted as bad in file order with the judged ones.
        self._copy: Path | None = None
        self._long_bad: list[tuple[int, str]] = []
        self._after_holes: dict[int, LongLine] = {}  # over-long only by a hole before them

    @property
    def line_map(self) -> LineMap:
        """The file's line structure (numbered on another thread while DuckDB parsed)."""
        if self._line_map is None:
            self._line_map = self._line_map_of()
            self.stats.count_lines(self.name, self._line_map.nonblank)
        return self._line_map

    def _row_lines(self, rows: np.ndarray) -> np.ndarray:
        """File lines of reader rows; rows of a live log past its map (made by another read,
        which ended before DuckDB's) are numbered by mapping it again, not a crash."""
        line_map = self.line_map
        if (len(rows) and int(rows.max()) > line_map.nonblank and self._remap is not None
                and self._copy is None):
            grown = self._remap()
            self.stats.count_lines(self.name, grown.nonblank - line_map.nonblank)
            self._line_map = line_map = grown
        return line_map.row_lines(rows)

    def _sql(self, sql: str) -> pa.Table:
        return arrow_table(self.con, sql)

    def _source(self, path: str) -> str:
        return source_sql(path, lean=self.lean, window=self.window)

    def _read(self, query: Callable[[str], str], run: Callable[[str], pa.Table]) -> pa.Table:
        """`query` over the kept lines of the file, or of a copy without its over-long lines.

        The check after a read that worked costs a look at the line map's block sizes:
        DuckDB may read a line over its limit at one offset and fail on it at another.
        """
        if self._copy is not None:
            return self._sql(query(self._source(str(self._copy))))
        try:
            # A batch's answer needs no text: building it cost ~0.1 ms a small file.
            got = run("" if isinstance(run, Answer) else query(self._source(self.path)))
        except duckdb.InvalidInputException as exc:
            if not is_object_size_error(exc):
                raise
            long = long_lines(self.path, self.line_map)
            if not long:
                # No line over the limit when the file was mapped: it changed since (a
                # copy-and-truncate under a writer that does not append, a record of
                # many MiB appended meanwhile). It was a traceback, exit 4.
                raise ChangedWhileRead(CHANGED_WHILE_READ) from exc
        else:
            long = long_lines(self.path, self.line_map)
            if not long:
                return got
        self._copy, self._line_map, self._long_bad, self._after_holes = set_aside(
            self.path, self.line_map, long, name=self.name, stats=self.stats)
        # Not prepared: the copy's path is new, the prepared text would not be run again.
        return self._sql(query(self._source(str(self._copy))))

    def _drop_copy(self) -> None:
        if self._copy is not None:
            release(self._copy.parent)
            self._copy = None

    def _count_bad(self, judged: list[tuple[int, str]], *, through: int | None = None) -> None:
        """Bad lines into the stats, in file order: those judged and the over-long ones.

        ``through``: more judged lines follow, all after this line; over-long lines after
        it wait for them.
        """
        cut = len(self._long_bad) if through is None else bisect.bisect_right(
            self._long_bad, through, key=lambda bad: bad[0])
        long, self._long_bad = self._long_bad[:cut], self._long_bad[cut:]
        for line, reason in heapq.merge(judged, long):
            self.stats.bad(self.name, line, reason)

    def _judge(self, rn: np.ndarray, empty: np.ndarray, timed: np.ndarray,
               untimed: np.ndarray) -> tuple[list[dict[str, Any]], list[tuple[int, str]]]:
        """Valid JSON that DuckDB rejected, as rows; and the bad lines with their reasons
        (`reading.suspects`)."""
        return judge_suspects(
            self._row_lines(rn.astype(np.int64)), rn, empty, timed, untimed, self._judged_text,
            fields=self.fields, starts_file=self.starts_file, stats=self.stats, name=self.name,
        )

    def _judged_text(self, numbers: Iterable[int]) -> dict[int, bytes]:
        """The text of lines to judge; a line after a hole of many MiB by `after_hole`."""
        if not self._after_holes:
            return self._fetch(numbers)
        wanted = list(numbers)
        texts = self._fetch(n for n in wanted if n not in self._after_holes)
        with open(self.path, "rb") as fh:
            texts.update((n, after_hole(fh, self._after_holes[n]))
                         for n in wanted if n in self._after_holes)
        return texts

    def spans(self) -> tuple[pa.Table, dict[str, np.ndarray]]:
        """One row per span (first-seen order), and its evidence lines by column."""
        try:
            return self._spans()
        finally:
            self._drop_copy()

    def _spans(self) -> tuple[pa.Table, dict[str, np.ndarray]]:
        got = self._read(lean_spans_sql if self.lean else full_spans_sql, self._run)
        # The span columns in this query's order, kept when rescued rows rebuild them: the
        # follower joins each file's spans into one table, and a file rebuilt in
        # `spans_select`'s order stopped `--follow` (exit 4, "Schema ... was different").
        fields = _span_fields(got)
        # First-seen order: sorting the few span rows here beats an ORDER BY in the plan.
        # The order is applied once, by the one take that also keeps the span rows.
        order = np.argsort(got["first_rn"].to_numpy(), kind="stable")
        kind = got["_kind"].to_numpy()[order]
        self.window_lines = int(pc.sum(got["_window"]).as_py() or 0)
        bad = kind == SUSPECT
        rescued: list[dict[str, Any]] = []
        if bad.any():
            suspects = take_rows(got, order[bad])
            rescued = judge_in_slices(suspect_lines(suspects), self._judge, self._count_bad)
            count_unjudged(suspects, self.stats, self.name)
        self._count_bad([])
        if rescued:  # rare: rebuild from ordered events, the rescued rows in their place
            events = self._events_with(rescued)
            # Evidence with no span_id among the rescued lines too: an Unlinked error
            # that DuckDB refused for a lone surrogate elsewhere on its line, judged valid
            # here, was read, linked to nothing and named nowhere: "No findings", exit 0.
            self.stats.unreadable_files.extend(
                unkeyed_events_notes(self.name, events, self._row_lines))
            self.con.register("ridtrace_events", events)
            try:
                got = arrow_table(self.con, spans_select("ridtrace_events"))
            finally:
                self.con.unregister("ridtrace_events")
        else:
            self._note_unkeyed(got, order[kind == OTHER])
            rows = [f"{c}_rn" for c in _LINE_KINDS]
            got = take_rows(got.select([*fields, *rows]), order[kind == SPAN])
        lines = {f"{c}_line": self._lines_of(got[f"{c}_rn"]) for c in _LINE_KINDS}
        return got.select(fields), lines

    def _note_unkeyed(self, got: pa.Table, other: np.ndarray) -> None:
        """Name the file when evidence is on a line with no ``span_id`` (`unkeyed`)."""
        if not len(other):
            return
        rows = take_rows(got, other)
        numbered = [kind for kind, _, _ in UNKEYED_KINDS
                    if rows[f"{kind}_rn"].null_count < len(rows)]
        if not numbered:  # a batch's row of its plain lines: no evidence among them
            return
        first = {kind: self._lines_of(rows[f"{kind}_rn"]) for kind in numbered}
        self.stats.unreadable_files.extend(unkeyed_notes(
            self.name,
            lambda kind: int(first[kind][0]) if len(first.get(kind, ())) else -1))

    def _ordered_events(self, run: Callable[[str], pa.Table] | None = None, *,
                        hex_ids: bool = False) -> pa.Table:
        return self._read(
            lambda source: normalized_select(f"({source})", keep=FLAGS, hex_ids=hex_ids)
            + " ORDER BY rn",
            run or self._sql,
        )

    def _events_with(self, rescued: list[dict[str, Any]]) -> pa.Table:
        # Spans rebuilt for the rules (a lean read) spell ids as the lean pass does.
        got = self._ordered_events(hex_ids=self.lean)
        good = got.filter(pc.invert(got["_suspect"]))
        if self.lean:
            good = good.filter(good["_ev"])
        extra = self._normalize_rows(rescued, hex_ids=self.lean)
        merged = pa.concat_tables([good.select(extra.column_names), extra])
        return merged.sort_by("rn")

    def _normalize_rows(self, rows: list[dict[str, Any]], *, hex_ids: bool = False) -> pa.Table:
        schema = pa.schema(
            [pa.field("rn", pa.int64()), pa.field("_t", TIME_TYPE)]
            + [pa.field(f, pa.string()) for f in READ_FIELDS if f != "time"]
        )
        if not self.lean:  # as the full read's scan shows them (`scan.source_sql`)
            for row in rows:
                show_as_logged(row)
        table = pa.Table.from_pylist(rows, schema=schema)
        # A lean read's rules see only the lines its scan keeps (`scan.LEAN_EVIDENCE`):
        # an application's line judged in Python (a lone surrogate in it) was kept, and
        # a line of another logger logged after its request ended stretched the request,
        # a false duplicate in flight, evidence that "is never evidence".
        source = (f"(SELECT *, {LEAN_EVIDENCE} IS TRUE AS _ev FROM ridtrace_rescued"
                  + (f" WHERE {LEAN_EVIDENCE} IS TRUE)" if self.lean else ")"))
        self.con.register("ridtrace_rescued", table)
        try:
            return arrow_table(self.con, normalized_select(source, hex_ids=hex_ids))
        finally:
            self.con.unregister("ridtrace_rescued")

    def events(self) -> tuple[pa.Table, np.ndarray]:
        """Normalised event rows in file order, and their line numbers."""
        try:
            return self._events()
        finally:
            self._drop_copy()

    def _events(self) -> tuple[pa.Table, np.ndarray]:
        got = self._ordered_events(self._events_run)
        self.window_lines = int(pc.sum(got["_in_window"]).as_py() or 0)
        suspect = got["_suspect"].to_numpy(zero_copy_only=False)
        rescued: list[dict[str, Any]] = []
        if suspect.any():  # judged in slices, as the span read judges them
            flags = got.filter(got["_suspect"])
            rescued = judge_in_slices((
                flags["rn"].to_numpy(),
                flags["_empty"].to_numpy(zero_copy_only=False),
                pc.is_valid(flags["_time_text"]).to_numpy(zero_copy_only=False),
                pc.is_null(flags["time"]).to_numpy(zero_copy_only=False),
            ), self._judge, self._count_bad)
        self._count_bad([])
        good = got.filter(pc.invert(got["_suspect"]))
        if self.lean:
            good = good.filter(good["_ev"])
        if rescued:
            extra = self._normalize_rows(rescued)
            good = pa.concat_tables([good.select(extra.column_names), extra]).sort_by("rn")
        self.stats.unreadable_files.extend(
            unkeyed_events_notes(self.name, good, self._row_lines))
        lines = self._row_lines(good["rn"].to_numpy())
        drop = [c for c in good.column_names if c == "rn" or c.startswith("_")]
        return good.drop_columns(drop), lines

    def _lines_of(self, rn: pa.ChunkedArray) -> np.ndarray:
        values = rn.to_numpy(zero_copy_only=False)
        if rn.null_count == 0:
            return self._row_lines(values.astype(np.int64))
        present = ~np.isnan(values)
        out = np.full(len(values), -1, dtype=np.int64)
        out[present] = self._row_lines(values[present].astype(np.int64))
        return out


_LINE_KINDS = ("first", "last", "unlinked", "foreign", "deprecated")
# A big file's span rows are taken, never sliced: the take's copy lets DuckDB's output
# go before the frame is built; a slice kept it (+100-200 MiB peak on 5M lines).
_SLICE_ROWS = 1 << 16


def take_rows(table: pa.Table, rows: np.ndarray) -> pa.Table:
    """``table.take(rows)``; a zero-copy slice when `rows` is one ascending run of a small
    table, as a small file's rows are once its batch put them in order
    (`small_files.split_by_file`): a take per file cost more than the batch's one."""
    if 0 < len(rows) <= _SLICE_ROWS and bool((np.diff(rows) == 1).all()):
        return table.slice(int(rows[0]), len(rows))
    return table.take(pa.array(rows))


def _span_fields(spans: pa.Table) -> list[str]:
    """The columns a span row keeps: not its row numbers, not the read's own flags."""
    return list(_kept_columns(tuple(spans.column_names)))


@functools.lru_cache(maxsize=16)
def _kept_columns(names: tuple[str, ...]) -> tuple[str, ...]:
    # Every file of a read has the same columns: worked out once, not per small file.
    return tuple(c for c in names if not c.endswith("_rn") and not c.startswith("_"))
