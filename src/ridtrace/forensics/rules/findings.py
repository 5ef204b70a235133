"""Building findings frames in bulk: columns in, one row per finding out.

A findings frame has the columns of `FINDING_COLUMNS`; ``evidence`` holds lists of
``{"file", "line"}`` dicts, the lines an operator opens to check the claim. Every
helper here works on whole columns; the only per-finding step is assembling the
small evidence lists and detail strings, in one pass over plain arrays.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

import numpy as np
import pandas as pd

from ridtrace.contract import SEVERITY
from ridtrace.forensics.reading.schema import FINDING_COLUMNS

Evidence = list[dict[str, Any]]


def texts(series: pd.Series) -> list[str | None]:
    """A column as Python strings, None where missing."""
    values = series.astype(object).to_numpy()
    return [v if isinstance(v, str) else (None if _missing(v) else str(v)) for v in values]


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or value is pd.NaT or value != value


def line_numbers(series: pd.Series) -> np.ndarray:
    """A line column as int64, -1 where missing."""
    return np.asarray(series.astype("Int64").to_numpy(dtype=np.int64, na_value=-1))


def evidence(files: Sequence[str], *line_columns: np.ndarray) -> list[Evidence]:
    """Per row, the ``{"file", "line"}`` items of its present lines, without repeats."""
    out: list[Evidence] = []
    for i, name in enumerate(files):
        seen: list[int] = []
        for column in line_columns:
            line = int(column[i])
            if line >= 0 and line not in seen:
                seen.append(line)
        out.append([{"file": name, "line": line} for line in seen])
    return out


def findings_frame(kind: str, columns: Mapping[str, Sequence[Any]] | None = None) -> pd.DataFrame:
    """A findings frame of one kind from equal-length columns (absent ones are null)."""
    columns = columns or {}
    n = len(next(iter(columns.values()))) if columns else 0
    data: dict[str, Any] = {}
    for col in FINDING_COLUMNS:
        if col == "kind":
            data[col] = [kind] * n
        elif col == "severity":
            data[col] = [SEVERITY[kind]] * n
        elif col in columns:
            data[col] = list(columns[col])
        else:
            data[col] = [None] * n
    for col in ("request_id", "x_request_id", "span_id"):
        data[col] = [v if isinstance(v, str) else None for v in data[col]]
    return cast(pd.DataFrame, pd.DataFrame(data, columns=list(FINDING_COLUMNS)))


def concat_evidence(parts: Iterable[list[Evidence]]) -> list[Evidence]:
    """Row-wise concatenation of evidence lists from several columns."""
    return [[item for items in row for item in items] for row in zip(*parts, strict=True)]
