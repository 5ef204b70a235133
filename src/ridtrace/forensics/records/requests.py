"""The requests frame's columns and the array helpers shared by its builders.

One row per request span, keyed by (trace_id, span_id); built by
`ridtrace.forensics.records.spans` from per-span rows that DuckDB aggregates.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ridtrace.forensics.reading.span_sql import VIEW_FIELDS

REQUEST_COLUMNS = (
    "trace_id",
    "span_id",
    "parent_span_id",
    "request_id",
    "x_request_id",
    "side",
    "start",
    "end",
    "outcome",
    "status",
    "fp_in",
    "fp_out",
    "deprecated",
    "route",
    "client",
    "method",
    "service",
    "worker",
    "error",
    "file",
    "first_line",
    "last_line",
    "last_file",
    "lines",
    "closing",
    # How long the request took to answer, as its request.end states (µs; null where
    # none does): `reading.sql.answered_in`.
    "answer_us",
    "unlinked",
    "unlinked_line",
    "unlinked_file",
    "foreign",
    "foreign_line",
    "foreign_file",
    "deprecated_line",
    "deprecated_file",
)
# Columns after those, only in the views' requests (`build_requests`, the Dask engine's
# full read): the span's logged name, which `export jaeger` and `trace` name a step by.
# `analyze`'s lean pass reads none, and its frames have no such column.
VIEW_COLUMNS = VIEW_FIELDS
# Each evidence line column and the column naming the file it is a line of. A span
# logged across files (a rotation in flight: its start in ``app.jsonl.1``, its end in
# ``app.jsonl``) has lines in several. ``file`` is the file of ``first_line``.
LINE_FILES = {
    "first_line": "file",
    "last_line": "last_file",
    "unlinked_line": "unlinked_file",
    "foreign_line": "foreign_file",
    "deprecated_line": "deprecated_file",
}


def group_rows(codes: np.ndarray, mask: np.ndarray, n: int, *, last: bool = False) -> np.ndarray:
    """Row of the first (or last) line of each group where `mask` holds (-1 if none).

    `codes` numbers the groups 0..n-1 (-1: in no group). Shared with the Dask engine's
    merge of partial requests, so both engines pick the same lines.
    """
    pos = np.flatnonzero(mask & (codes >= 0))
    if last:
        pos = pos[::-1]
    out = np.full(n, -1, dtype=np.int64)
    if len(pos):
        uniq, first = np.unique(codes[pos], return_index=True)
        out[uniq] = pos[first]
    return out


def latest_rows(codes: np.ndarray, mask: np.ndarray, ends: pd.Series, n: int) -> np.ndarray:
    """Row of each group's partial, among those where `mask` holds, that ends latest in
    time, the last in order among equals (-1 if none). The id a span ends with is its
    latest line's, and a log printed newest first (Loki's ``logcli query``) holds its
    latest lines in its first part."""
    pos = np.flatnonzero(mask & (codes >= 0))
    out = np.full(n, -1, dtype=np.int64)
    if len(pos):
        # NaT (no timed line) is the smallest int64: any timed partial is later.
        naive = ends.astype("datetime64[us, UTC]").dt.tz_localize(None)
        at = naive.to_numpy(dtype="datetime64[us]", na_value=np.datetime64("NaT")).view(np.int64)
        pos = pos[np.lexsort((pos, at[pos]))][::-1]
        uniq, first = np.unique(codes[pos], return_index=True)
        out[uniq] = pos[first]
    return out


_STRING = pd.ArrowDtype(pa.string())


def epoch_us(times: pd.Series) -> np.ndarray:
    """Microseconds since the epoch of a tz-aware datetime Series (no copy of the data)."""
    return np.asarray(times.dt.as_unit("us").astype("int64").to_numpy(), dtype=np.int64)


def take_rows(series: pd.Series, rows: np.ndarray) -> Any:
    """Values of `series` at `rows`; -1 gives a missing value."""
    return series.array.take(rows, allow_fill=True)
