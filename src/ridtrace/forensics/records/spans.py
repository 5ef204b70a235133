"""Per-span records: one row per request span, from a read's parts or from an events frame.

Both engines and every view build requests here, from the one SQL aggregation in
`ridtrace.forensics.reading.sql`, so a span has the same fields whichever way it was
read.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from ridtrace.forensics.reading.connection import arrow_table, connect, shared_cursor
from ridtrace.forensics.reading.span_sql import spans_select
from ridtrace.forensics.records.finished import finish_requests
from ridtrace.forensics.records.partials import (
    LINE_COLUMNS,
    combine_requests,
    partial_frame,
    pieces_frame,
)
from ridtrace.forensics.records.pieces import SpanPiece
from ridtrace.forensics.records.requests import VIEW_COLUMNS


def requests_from_partials(
    partials: Sequence[pd.DataFrame], names: list[str], offsets: Sequence[int] | None = None
) -> pd.DataFrame:
    """Combine the parts' partial frames into the requests frame.

    `offsets[part]` is the number of lines before part `part` in its file (all zero
    when each part is a whole file).
    """
    if not partials:  # only a lean read has none: a views' read has a part per file
        partials = [empty_partial(lean=True)]
    combined = combine_requests(pd.concat(partials, ignore_index=True))
    parts = int(max((int(p["_part"].max()) for p in partials if len(p)), default=0)) + 1
    shift = list(offsets) if offsets is not None else [0] * parts
    return finish_requests(combined, names, shift)


def empty_partial(*, lean: bool = False) -> pd.DataFrame:
    """The partial frame of no spans, with the dtypes every part produces; `lean`: as the
    lean pass produces them, with no `VIEW_COLUMNS`."""
    if lean:
        return _empty_partial().drop(columns=list(VIEW_COLUMNS))
    return _empty_partial().copy()


@functools.lru_cache(maxsize=1)
def _empty_partial() -> pd.DataFrame:
    # Built once per process: a DuckDB connection and query over no events (~70 ms),
    # which `--engine dask` paid for its meta on every run, and again in any task whose
    # files were all skipped. Callers get a copy.
    return _partials_of_events(_empty_events())[0]


def _empty_events() -> pa.Table:
    from ridtrace.forensics.reading.events import empty_events_table

    return empty_events_table()


# Events up to which a span query runs on the process's shared DuckDB database.
_SHARED_DATABASE_ROWS = 100_000


def _partials_of_events(table: pa.Table) -> list[pd.DataFrame]:
    """The partial frame of an events table, one part per file, as `analyze` reads one
    part per file, so a span logged in several files is combined by the same rule on
    either path.

    One query groups every file's spans: a query per file scanned the whole table
    each time, so 3,111 small pod logs cost `trace`, `export jaeger` and `audit` over a
    minute of CPU after their read.
    """
    files = table["file"].to_numpy(zero_copy_only=False)
    lines = table["line"].to_numpy(zero_copy_only=False)
    rows = table.drop_columns(["line"]).append_column(
        "rn", pa.array(np.arange(table.num_rows, dtype=np.int64))
    )
    # The process's shared database for a small table, where opening one cost more than
    # the query; a large table's query on a database of its own, closed after it: what
    # DuckDB held for the query is freed before the views build their frames (a shared
    # one kept it, and `export jaeger` of 206 MB peaked 20-30 % higher).
    con = shared_cursor() if table.num_rows <= _SHARED_DATABASE_ROWS else connect()
    try:
        con.register("ridtrace_events", rows)
        if not len(files):
            spans = arrow_table(con, spans_select("ridtrace_events"))
            return [partial_frame(*_line_numbers(spans, lines), file_id=0, part=0)]
        spans = arrow_table(con, spans_select("ridtrace_events", by_file=True))
    finally:
        con.close()
    file_ids = np.unique(files)
    of_file = spans["file"].to_numpy(zero_copy_only=False)
    bounds = np.asarray(np.searchsorted(of_file, np.r_[file_ids, file_ids[-1] + 1]), dtype=np.int64)
    spans = spans.drop_columns(["file"])
    pieces = []
    for at, file_id in enumerate(file_ids.tolist()):
        piece = spans.slice(int(bounds[at]), int(bounds[at + 1] - bounds[at]))
        pieces.append(SpanPiece(*_line_numbers(piece, lines), int(file_id), int(file_id)))
    return [pieces_frame(pieces)]


def _line_numbers(spans: pa.Table, lines: np.ndarray) -> tuple[pa.Table, dict[str, np.ndarray]]:
    """`spans` without their row numbers, and the lines those numbers name (-1: none)."""
    out: dict[str, np.ndarray] = {}
    for col in LINE_COLUMNS:
        rn = spans[col.replace("_line", "_rn")].to_numpy(zero_copy_only=False)
        if spans[col.replace("_line", "_rn")].null_count:
            missing = np.isnan(rn)
            picked = np.where(missing, 0, rn).astype(np.int64)
            out[col] = np.where(missing, -1, lines[picked] if len(lines) else 0)
        else:
            out[col] = lines[rn.astype(np.int64)] if len(lines) else rn.astype(np.int64)
    spans = spans.drop_columns([c for c in spans.column_names if c.endswith("_rn")])
    return spans, out


def build_requests(events: pd.DataFrame) -> pd.DataFrame:
    """One row per request span of an events frame (first-seen order).

    `side` is ``worker`` for a span with any worker lifecycle line (or Dynamo's
    ``handle_payload`` span), otherwise ``frontend``. Scalar fields take the first
    non-null value among the span's lines; ``request_id`` the last.
    """
    names = [str(c) for c in events["file"].cat.categories]
    frame = events.assign(file=events["file"].cat.codes.astype(np.int32))
    table = pa.Table.from_pandas(frame, preserve_index=False)
    return requests_from_partials(_partials_of_events(_plain_text(table)), names)


def _plain_text(table: pa.Table) -> pa.Table:
    """Dictionary columns as plain strings: the SQL compares them as text."""
    cols = []
    for col in table.columns:
        cols.append(col.cast(pa.string()) if pa.types.is_dictionary(col.type) else col)
    return pa.Table.from_arrays(cols, names=table.column_names)
