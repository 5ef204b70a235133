"""New lines to per-span rows, through the batch read path.

A chunk of whole lines is staged to a plain temporary file and read by the same lean
DuckDB pass `ridtrace analyze` runs (`LogTable.spans`): one row per span of the chunk,
its suspect lines judged as in a batch read. Line numbers, and the bad lines' file:line
samples, are moved from the chunk's own numbering to the file's. The rows of all
chunks of a poll then go to the rules in time order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ridtrace.contract import FOREIGN_CHUNK, RESPONSE_UNLINKED, WORKER
from ridtrace.forensics.live.tail import Chunk
from ridtrace.forensics.reading.files import parse
from ridtrace.forensics.reading.lines import map_chunk
from ridtrace.forensics.reading.stats import BadLine, ReadStats

# Per span and batch: what the incremental rules read, one row per span of a chunk.
COLUMNS = (
    "trace_id", "span_id", "file", "first_line", "last_line", "t0", "t1", "request_id",
    "x_request_id", "parent_span_id", "fp_in", "fp_out", "outcome", "worker", "closing",
    "request_end", "worker_end", "flag_event", "flag_text", "flag_chunk", "flag_line",
)
_AS_IS = ("trace_id", "span_id", "request_id", "x_request_id", "parent_span_id", "fp_in",
          "fp_out", "outcome", "closing", "request_end", "worker_end")


@dataclass
class SpanRows:
    """One batch as per-span rows (plain Python columns), and its latest log time."""

    columns: dict[str, list[Any]]
    rows: int
    watermark: int


@dataclass
class ChunkSpans:
    """One chunk's per-span rows (`LogTable.spans`) with lines in the file's numbering."""

    name: str
    spans: pa.Table
    lines: dict[str, np.ndarray]

    @property
    def latest(self) -> int | None:
        """The latest log time of the chunk's spans (epoch µs), None when it has none."""
        if not self.spans.num_rows:
            return None
        value = pc.max(self.spans["end"]).cast(pa.int64()).as_py()
        return int(value) if value is not None else None


def parse_chunk(
    con: duckdb.DuckDBPyConnection, chunk: Chunk, stats: ReadStats, staged: Path
) -> ChunkSpans:
    """The chunk's per-span rows, its bad lines counted in `stats`."""
    local = ReadStats()
    with open(staged, "wb") as out:
        out.write(chunk.data)
    line_map = map_chunk(chunk.data, chunk.scan)
    table = parse(con, staged, line_map, chunk.name, local, lean=True, window=None)
    spans, lines = table.spans()
    shift = chunk.first_line - 1
    local.samples = [BadLine(s.file, s.line + shift, s.reason) for s in local.samples]
    local.files = 0
    stats.merge(local)
    shifted = {k: np.where(v >= 0, v + shift, -1) for k, v in lines.items()}
    return ChunkSpans(chunk.name, spans, shifted)


def span_rows(parts: list[ChunkSpans]) -> SpanRows:
    """Several chunks' span rows, in time order (file order on ties), as plain columns."""
    parts = [p for p in parts if p.spans.num_rows]
    if not parts:
        return SpanRows({c: [] for c in COLUMNS}, 0, 0)
    table = pa.concat_tables([p.spans for p in parts])
    lines = {k: np.concatenate([p.lines[k] for p in parts]) for k in parts[0].lines}
    t0 = table["start"].cast(pa.int64()).fill_null(0).to_numpy()
    t1 = table["end"].cast(pa.int64()).fill_null(0).to_numpy()
    part = np.repeat(np.arange(len(parts)), [p.spans.num_rows for p in parts])
    order = np.lexsort((lines["first_line"], part, t0))
    table = table.take(pa.array(order))
    out: dict[str, list[Any]] = {c: table[c].to_pylist() for c in _AS_IS}
    names = [p.name for p in parts]
    out["file"] = [names[i] for i in part[order].tolist()]
    out["first_line"] = lines["first_line"][order].tolist()
    out["last_line"] = lines["last_line"][order].tolist()
    out["t0"], out["t1"] = t0[order].tolist(), t1[order].tolist()
    out["worker"] = [side == WORKER for side in table["side"].to_pylist()]
    _flags(out, table, lines["unlinked_line"][order], lines["foreign_line"][order])
    return SpanRows(out, table.num_rows, int(t1.max()))


def _flags(out: dict[str, list[Any]], table: pa.Table, unlinked: np.ndarray,
           foreign: np.ndarray) -> None:
    """The first Unlinked or foreign-chunk line of each span: its event, text, line."""
    # -1: none. A span's first flag line wins, as the rules report a span once.
    pick_foreign = (foreign >= 0) & ((unlinked < 0) | (foreign < unlinked))
    pick_unlinked = (unlinked >= 0) & ~pick_foreign
    texts, chunks = table["unlinked"].to_pylist(), table["foreign"].to_pylist()
    events: list[str | None] = []
    text_col: list[str | None] = []
    chunk_col: list[str | None] = []
    for i, (u, f) in enumerate(zip(pick_unlinked.tolist(), pick_foreign.tolist(), strict=True)):
        events.append(RESPONSE_UNLINKED if u else FOREIGN_CHUNK if f else None)
        text_col.append(texts[i] if u else None)
        chunk_col.append(chunks[i] if f else None)
    out["flag_event"], out["flag_text"], out["flag_chunk"] = events, text_col, chunk_col
    out["flag_line"] = np.where(pick_foreign, foreign, unlinked).tolist()
