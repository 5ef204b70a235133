"""A requests frame's pandas columns as plain arrays: Arrow strings, microseconds, lines.

Taken once per column by `rules.columns.span_columns`; a column pandas holds as Arrow is
not copied, and a categorical stays one dictionary array.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ridtrace.forensics.rules.codes import Arrow


def arrow_text(series: pd.Series) -> Arrow:
    """A column as Arrow strings, chunked as pandas holds them (no copy when Arrow-backed)."""
    arr = arrow_column(series)
    return arr.cast(pa.string()) if arr.type != pa.string() else arr


def arrow_column(series: pd.Series) -> Arrow:
    """A column as Arrow strings, or one dictionary array of strings for a categorical.

    Chunks are kept: the rules only take a few rows from most columns, and the columns
    they hash are copied into one array there anyway (`codes.shared_codes`).
    """
    try:
        arr: Any = pa.array(series, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed Python objects: ids as text
        arr = pa.array([_as_text(v) for v in series.tolist()], type=pa.string())
    if pa.types.is_dictionary(arr.type):
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
        if _unique(arr.dictionary):
            return pa.DictionaryArray.from_arrays(arr.indices, arr.dictionary.cast(pa.string()))
    return arr.cast(pa.string()) if arr.type != pa.string() else arr


def _unique(values: pa.Array) -> bool:
    # pandas' categories are unique; a dictionary with repeats would split equal values.
    return len(pc.unique(values)) == len(values)


def _as_text(value: Any) -> str | None:
    if value is None or value is pd.NA or value is pd.NaT or value != value:
        return None
    return value if isinstance(value, str) else str(value)


def epoch_us(times: pd.Series) -> np.ndarray:
    """Microseconds since the epoch of a datetime column (NaT: the int64 minimum)."""
    if isinstance(times.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(times):
        values = times.to_numpy(dtype="datetime64[us]")
    else:
        values = pd.to_datetime(times, utc=True).to_numpy(dtype="datetime64[us]")
    return np.asarray(values.view(np.int64))


def line_numbers(series: pd.Series) -> np.ndarray:
    """A line column as int64, -1 where missing."""
    if series.dtype == np.int64:
        return np.asarray(series.to_numpy())
    return np.asarray(series.astype("Int64").to_numpy(dtype=np.int64, na_value=-1))
