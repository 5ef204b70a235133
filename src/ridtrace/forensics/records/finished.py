"""Combined partial requests → the requests frame both engines hand the rules.

`ridtrace.forensics.records.partials` builds and combines the per-part rows; this puts
them back in first-seen order, with each evidence line resolved to its line in its file
and each column in `build_requests`' dtype.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ridtrace.forensics.records.nesting import host_orphan_workers, nest_inner_spans
from ridtrace.forensics.records.partials import (
    ARROW_STRING,
    FILE_COLUMNS,
    INNER,
    LINE_BITS,
    LINE_COLUMNS,
    OUTER,
    in_part_order,
    is_text,
)
from ridtrace.forensics.records.requests import REQUEST_COLUMNS, VIEW_COLUMNS


def _resolve_lines(series: pd.Series, offsets: np.ndarray) -> Any:
    """``part << 32 | line`` → the line in the file (partition's offset + line)."""
    values = series.array
    raw = np.asarray(values.to_numpy(dtype=np.int64, na_value=0), dtype=np.int64)
    lines = (raw & ((1 << LINE_BITS) - 1)) + offsets[raw >> LINE_BITS]
    mask = np.asarray(series.isna().to_numpy(), dtype=bool)
    if isinstance(series.dtype, pd.Int64Dtype):
        return pd.arrays.IntegerArray(lines, mask)
    return lines


def finish_requests(
    combined: pd.DataFrame, names: list[str], offsets: Sequence[int] = (0,)
) -> pd.DataFrame:
    """Combined partials → exactly what `build_requests` gives on the whole input.

    `offsets[part]` is the number of lines before partition `part` in its file. Rows
    go back to first-seen order (partition, then position in it), which the rules'
    tie-breaks depend on, and columns to `build_requests`' dtypes.
    """
    ordered = in_part_order(combined)
    shift = np.asarray(offsets, dtype=np.int64)
    out: dict[str, Any] = {}
    for col in (*REQUEST_COLUMNS, *(c for c in VIEW_COLUMNS if c in ordered)):
        series = ordered[col]
        if col in LINE_COLUMNS:
            out[col] = _resolve_lines(series, shift)
        elif col in FILE_COLUMNS:
            codes = np.asarray(series.to_numpy(), dtype=np.int32)
            out[col] = pd.Categorical.from_codes(codes, categories=pd.Index(names, dtype=object))
        elif col in _CATEGORIES:
            out[col] = series.astype("category")
        elif is_text(series.dtype):  # Dask hands Arrow strings back as pandas' `str`
            out[col] = series.astype(ARROW_STRING).array
        else:
            out[col] = series.array
    if INNER in ordered:
        inner = np.asarray(ordered[INNER].to_numpy(dtype=bool), dtype=bool)
        outer = np.asarray(ordered[OUTER].to_numpy(dtype=bool), dtype=bool)
        if inner.any():
            out["parent_span_id"] = nest_inner_spans(out, inner, outer)
        if outer.any():
            out["parent_span_id"] = host_orphan_workers(out, outer)
    return pd.DataFrame(out)


# Columns `build_requests` returns as pandas categoricals (taken from categorical events).
_CATEGORIES = ("outcome", "status", "route", "method", "service", "worker")
