"""New lines to normalised events, through the batch read path.

A chunk of whole lines is staged to a plain temporary file (`stage`, which numbers its
lines) and parsed by the same DuckDB normalisation `ridtrace analyze` runs
(`LogTable.events`, lean). Line numbers, and the bad lines' file:line samples, are
moved from the chunk's own numbering to the file's.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from ridtrace.forensics.live.tail import Chunk
from ridtrace.forensics.reading.files import parse, stage
from ridtrace.forensics.reading.stats import BadLine, ReadStats

# The event columns the incremental rules read, as Python lists.
COLUMNS = (
    "event", "side", "request_id", "x_request_id", "trace_id", "span_id", "parent_span_id",
    "outcome", "fp_in", "fp_out", "error", "message", "chunk_request_id",
)


@dataclass
class EventBatch:
    """Events of one or more chunks, as plain columns (time in epoch µs)."""

    time: np.ndarray
    line: np.ndarray
    file: list[str]
    columns: dict[str, list[str | None]]

    def __len__(self) -> int:
        return len(self.time)


def parse_chunk(
    con: duckdb.DuckDBPyConnection, chunk: Chunk, stats: ReadStats, staged: Path
) -> tuple[pa.Table, np.ndarray]:
    """The chunk's evidence events and their line numbers in the file."""
    local = ReadStats()
    with open(staged, "wb") as out:
        line_map = stage(b"", io.BytesIO(chunk.data), out, chunk.name, local)
    table = parse(con, staged, line_map, chunk.name, local, lean=True, window=None)
    rows, lines = table.events()
    shift = chunk.first_line - 1
    local.samples = [BadLine(s.file, s.line + shift, s.reason) for s in local.samples]
    local.files = 0
    stats.merge(local)
    return rows, np.asarray(lines, dtype=np.int64) + shift


def to_batch(parts: list[tuple[str, pa.Table, np.ndarray]]) -> EventBatch:
    """Several chunks' events as one batch, in time order (stable: file order on ties)."""
    parts = [p for p in parts if p[1].num_rows]
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return EventBatch(empty, empty, [], {c: [] for c in COLUMNS})
    table = pa.concat_tables([p[1] for p in parts])
    # Lines without a time are bad lines, never events: the fill is only for the type.
    times = table["time"].cast(pa.int64()).fill_null(0).to_numpy()
    order = np.argsort(times, kind="stable")
    lines = np.concatenate([p[2] for p in parts])[order]
    names = np.repeat(np.arange(len(parts)), [p[1].num_rows for p in parts])[order]
    table = table.take(pa.array(order))
    files = [parts[i][0] for i in names.tolist()]
    columns = {c: table[c].to_pylist() for c in COLUMNS}
    return EventBatch(times[order], lines, files, columns)
