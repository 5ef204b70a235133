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
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from ridtrace.contract import (
    FOREIGN_CHUNK,
    REQUEST_END,
    RESPONSE_UNLINKED,
    SPAN_CLOSED,
    WORKER,
    WORKER_END,
    WORKER_ERROR,
    WORKER_REFUSED,
)
from ridtrace.forensics.live.tail import Chunk
from ridtrace.forensics.reading.files import parse, stage
from ridtrace.forensics.reading.sql import literal
from ridtrace.forensics.reading.stats import BadLine, ReadStats

# Per span and batch: what the incremental rules read, one row per span of the batch.
COLUMNS = (
    "trace_id", "span_id", "file", "first_line", "last_line", "t0", "t1", "request_id",
    "x_request_id", "parent_span_id", "fp_in", "fp_out", "outcome", "worker", "closing",
    "request_end", "worker_end", "flag_event", "flag_text", "flag_chunk", "flag_line",
)
_CLOSING = (REQUEST_END, SPAN_CLOSED, WORKER_END, WORKER_ERROR, WORKER_REFUSED)
_FLAGS = (RESPONSE_UNLINKED, FOREIGN_CHUNK)


def _first(col: str) -> str:
    return f"arg_min({col}, ord) FILTER (WHERE {col} IS NOT NULL) AS {col}"


def _flag(expr: str, name: str) -> str:
    return f"arg_min({expr}, ord) FILTER (WHERE event IN {_in(_FLAGS)}) AS {name}"


def _in(values: tuple[str, ...]) -> str:
    return "(" + ", ".join(literal(v) for v in values) + ")"


# The batch's events collapse to one row per span: the rules then touch each span once
# per batch instead of once per line. Same picks as `reading.sql.span_aggregates`.
_SPAN_ROWS = f"""
SELECT trace_id, span_id, arg_min(file, ord) AS file,
    arg_min(line, ord) AS first_line, arg_max(line, ord) AS last_line,
    epoch_us(min(time)) AS t0, epoch_us(max(time)) AS t1,
    arg_max(request_id, ord) FILTER (WHERE request_id IS NOT NULL) AS request_id,
    {_first("x_request_id")}, {_first("parent_span_id")}, {_first("fp_in")},
    {_first("fp_out")}, {_first("outcome")},
    bool_or(side = {literal(WORKER)}) IS TRUE AS worker,
    bool_or(event IN {_in(_CLOSING)}) IS TRUE AS closing,
    bool_or(event = {literal(REQUEST_END)}) IS TRUE AS request_end,
    bool_or(event = {literal(WORKER_END)}) IS TRUE AS worker_end,
    {_flag("event", "flag_event")}, {_flag("coalesce(error, message)", "flag_text")},
    {_flag("chunk_request_id", "flag_chunk")}, {_flag("line", "flag_line")}
FROM ridtrace_live WHERE span_id IS NOT NULL
GROUP BY trace_id, span_id
ORDER BY min(ord)
"""


@dataclass
class SpanRows:
    """One batch as per-span rows (plain Python columns), and its latest log time."""

    columns: dict[str, list[Any]]
    rows: int
    watermark: int


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


def span_rows(
    con: duckdb.DuckDBPyConnection, parts: list[tuple[str, pa.Table, np.ndarray]]
) -> SpanRows:
    """Several chunks' events, in time order (file order on ties), as per-span rows."""
    parts = [p for p in parts if p[1].num_rows]
    if not parts:
        return SpanRows({c: [] for c in COLUMNS}, 0, 0)
    table = pa.concat_tables([p[1] for p in parts])
    # Lines without a time are bad lines, never events: the fill is only for the type.
    times = table["time"].cast(pa.int64()).fill_null(0).to_numpy()
    order = np.argsort(times, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    names = pa.DictionaryArray.from_arrays(
        pa.array(np.repeat(np.arange(len(parts), dtype=np.int32),
                           [p[1].num_rows for p in parts])),
        pa.array([p[0] for p in parts]),
    )
    events = table.append_column("ord", pa.array(rank)).append_column(
        "line", pa.array(np.concatenate([p[2] for p in parts]))
    ).append_column("file", names.cast(pa.string()))
    con.register("ridtrace_live", events)
    try:
        got = con.sql(_SPAN_ROWS).to_arrow_table()
    finally:
        con.unregister("ridtrace_live")
    columns = {c: got[c].to_pylist() for c in COLUMNS}
    return SpanRows(columns, got.num_rows, int(times.max()))
