"""Read log inputs: an events frame for the views, per-span partials for the rules.

Both go through the same stages, one source at a time: inputs → lines (numbered)
→ typed, normalised columns (DuckDB) → events, or per-span rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import pandas as pd
import pyarrow as pa

from ridtrace.forensics.reading.inputs import Inputs, Source, expand_inputs
from ridtrace.forensics.reading.parallel import Batched, read_all
from ridtrace.forensics.reading.scan import to_window
from ridtrace.forensics.reading.schema import EVENT_CATEGORY_COLUMNS, EVENT_COLUMNS, TIME_TYPE
from ridtrace.forensics.reading.stats import ReadStats
from ridtrace.forensics.reading.table import LogTable

Progress = Callable[[int], None]


@dataclass
class LoadedLogs:
    """The events frame of a read plus its counters (lines, bad lines, samples)."""

    events: pd.DataFrame
    stats: ReadStats
    files: list[str]
    # Valid lines whose time is in the read's window; None when no window was asked.
    window_lines: int | None = None


def empty_events_table() -> pa.Table:
    """An events table of no rows, with the events frame's column types."""
    fields = []
    for col in EVENT_COLUMNS:
        if col == "file":
            typ: pa.DataType = pa.int32()
        elif col == "line":
            typ = pa.int64()
        elif col in ("time", "began"):
            typ = TIME_TYPE
        elif col == "evidence":
            typ = pa.bool_()
        else:
            typ = pa.string()
        fields.append(pa.field(col, typ))
    return pa.schema(fields).empty_table()


def _arrow_strings(typ: pa.DataType) -> pd.ArrowDtype | None:
    return pd.ArrowDtype(typ) if typ == pa.string() else None


def events_frame(table: pa.Table, files: Sequence[str]) -> pd.DataFrame:
    """Arrow events table → pandas: ids as Arrow strings, the rest categorical/numpy."""
    df = table.to_pandas(types_mapper=_arrow_strings, self_destruct=True)
    codes = np.asarray(df["file"].to_numpy(), dtype=np.int32)
    df["file"] = pd.Categorical.from_codes(codes, categories=pd.Index(list(files), dtype=object))
    for col in EVENT_CATEGORY_COLUMNS:
        if not isinstance(df[col].dtype, pd.CategoricalDtype):
            values = df[col].to_numpy(dtype=object, na_value=np.nan)
            df[col] = pd.Categorical(values)
    return cast(pd.DataFrame, df)


def _events_table(table: LogTable, file_id: int) -> pa.Table:
    rows, lines = table.events()
    n = rows.num_rows
    cols = {
        "file": pa.array(np.full(n, file_id, dtype=np.int32)),
        "line": pa.array(lines, pa.int64()),
    }
    arrays = [cols[c] if c in cols else rows[c] for c in EVENT_COLUMNS]
    return pa.Table.from_arrays(arrays, names=list(EVENT_COLUMNS))


def read_sources(
    sources: Sequence[Source],
    *,
    on_bytes: Progress | None = None,
    lean: bool = False,
    since: pd.Timestamp | None = None,
    until: pd.Timestamp | None = None,
) -> LoadedLogs:
    """Read and normalise every source into one events frame; bad lines are counted.

    ``lean=True`` keeps only the evidence lines (lifecycle events, fingerprints,
    deprecated headers, Unlinked errors) and reads no display-only field (level,
    client, route, …). The other lines are still counted and checked. With
    `since`/`until`, `LoadedLogs.window_lines` counts the valid lines in that window.
    """
    # Small files many to a query, as `analyze` reads them: 3,111 pod logs took a query
    # plan each, over a minute of CPU where analyze took seconds.
    batched = None if lean else Batched(_events_table, pa.concat_tables, events=True)
    read = read_all(sources, _events_table, lean=lean, window=to_window(since, until),
                    on_bytes=on_bytes, batched=batched)
    names = [src.name for src in sources]
    events = pa.concat_tables(read.results) if read.results else empty_events_table()
    return LoadedLogs(
        events=events_frame(events, names), stats=read.stats, files=names,
        window_lines=read.window_lines,
    )


def load_events(
    inputs: Inputs,
    *,
    on_bytes: Progress | None = None,
    lean: bool = False,
    since: pd.Timestamp | None = None,
    until: pd.Timestamp | None = None,
) -> LoadedLogs:
    """Expand PATH arguments (files, dirs, globs, ``-``; one, or a sequence) and load
    their events.

    Raises `ridtrace.forensics.reading.inputs.ForensicsInputError` for a missing path.
    """
    return read_sources(
        expand_inputs(inputs), on_bytes=on_bytes, lean=lean, since=since, until=until
    )


__all__ = [
    "LoadedLogs",
    "empty_events_table",
    "events_frame",
    "load_events",
    "read_sources",
    "to_window",
]
