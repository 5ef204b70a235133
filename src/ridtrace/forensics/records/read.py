"""Per-span records of a read: what `ridtrace analyze` reads, one part per file.

The same stages as the events read (`ridtrace.forensics.reading.events`), ending in
DuckDB's per-span aggregation instead of exported lines: the rules need one row per
request, not the lines behind it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import pandas as pd

from ridtrace.forensics.reading.events import to_window
from ridtrace.forensics.reading.files import read_source
from ridtrace.forensics.reading.inputs import Source
from ridtrace.forensics.reading.stats import ReadStats
from ridtrace.forensics.reading.table import LogTable, connect
from ridtrace.forensics.records.partials import partial_frame

Progress = Callable[[int], None]


def partial_of(table: LogTable, file_id: int, part: int) -> pd.DataFrame:
    """A parsed file's (or block's) per-span rows as a partial frame of part `part`."""
    spans, lines = table.spans()
    return partial_frame(spans, lines, file_id=file_id, part=part)


@dataclass
class LoadedRequests:
    """Per-span partials of a read (one part per file), with its counters."""

    partials: list[pd.DataFrame]
    stats: ReadStats
    files: list[str]
    window_lines: int | None = None


def read_partials(
    sources: Sequence[Source],
    *,
    on_bytes: Progress | None = None,
    since: pd.Timestamp | None = None,
    until: pd.Timestamp | None = None,
) -> LoadedRequests:
    """What `analyze` reads: per-span rows of every source's evidence lines."""
    stats = ReadStats()
    window = to_window(since, until)
    partials: list[pd.DataFrame] = []
    in_window = 0
    con = connect()
    try:
        for file_id, src in enumerate(sources):
            got = read_source(
                con, src, partial(_spans_of, file_id=file_id),
                stats=stats, lean=True, window=window, on_bytes=on_bytes,
            )
            if got is not None:
                partials.append(got[0])
                in_window += got[1]
    finally:
        con.close()
    return LoadedRequests(
        partials, stats, [src.name for src in sources],
        window_lines=in_window if window is not None else None,
    )


def _spans_of(table: LogTable, *, file_id: int) -> tuple[pd.DataFrame, int]:
    return partial_of(table, file_id, file_id), table.window_lines
