"""New lines to per-span rows, through the batch read path.

A chunk of whole lines is staged to a plain temporary file and read by the same lean
DuckDB pass `ridtrace analyze` runs (`LogTable.spans`): one row per span of the chunk,
its suspect lines judged as in a batch read. Line numbers, and the bad lines' file:line
samples, are moved from the chunk's own numbering to the file's. The rows of all
chunks of a poll then go to the rules in time order.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ridtrace.contract import FOREIGN_CHUNK, RESPONSE_UNLINKED, WORKER
from ridtrace.forensics.live.chunk import Chunk
from ridtrace.forensics.reading.connection import PreparedReads
from ridtrace.forensics.reading.files import parse
from ridtrace.forensics.reading.inputs import display_name
from ridtrace.forensics.reading.lines import LineMap, map_chunk
from ridtrace.forensics.reading.small_files import (
    SMALL_FILE_BYTES,
    BatchCopy,
    batch_or_none,
    batch_spans,
)
from ridtrace.forensics.reading.stats import BadLine, ReadStats
from ridtrace.forensics.reading.table import Answer
from ridtrace.forensics.reading.unkeyed import in_whole_file
from ridtrace.forensics.rules import MAX_CALLER_DEPTH

# Per span and batch: what the incremental rules read, one row per span of a chunk.
COLUMNS = (
    "trace_id", "span_id", "file", "first_line", "last_line", "t0", "t1", "request_id",
    "x_request_id", "parent_span_id", "fp_in", "fp_out", "outcome", "worker", "closing",
    "request_end", "worker_end", "first_time", "started", "inner", "outer",
)
_AS_IS = ("trace_id", "span_id", "request_id", "x_request_id", "parent_span_id", "fp_in",
          "fp_out")
_FLAGS = ("closing", "request_end", "worker_end", "started", "inner", "outer")
_READ = ("outcome", "side", *_FLAGS, "unlinked", "foreign")


@dataclass(frozen=True)
class Flag:
    """A span's first Unlinked or foreign-chunk line: its event, text, foreign id, line."""

    event: str
    text: str | None
    chunk_request_id: str | None
    line: int


@dataclass
class SpanRows:
    """One batch as per-span rows (plain Python columns), and its latest log time.

    `flags` holds, by row number, the few spans with an Unlinked or foreign-chunk line,
    so the many without one carry no column for it.
    """

    columns: dict[str, list[Any]]
    rows: int
    watermark: int
    flags: dict[int, Flag] = field(default_factory=dict)
    # The rows' latest times (``t1``) as one array, for what the follower checks per batch.
    ends: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


@dataclass
class ChunkSpans:
    """One chunk's per-span rows (`LogTable.spans`) with lines in the file's numbering."""

    name: str
    spans: pa.Table
    lines: dict[str, np.ndarray]

    def latest(self, limit: int) -> int | None:
        """The latest log time of the chunk's spans (epoch µs) up to `limit`, None when
        it has none."""
        if not self.spans.num_rows:
            return None
        ends = self.spans["end"].cast(pa.int64())
        value = pc.max(ends.filter(pc.less_equal(ends, limit))).as_py()
        return int(value) if value is not None else None


def _prepared_run(
    queries: PreparedReads | None, staged: Path
) -> Callable[[str], pa.Table] | None:
    # Every chunk is staged to the same file: its query is prepared once (the parser
    # took ~5 of the ~11 ms a small chunk's query cost) and reads the file as it is now.
    if queries is None:
        return None
    return lambda sql: queries.arrow(sql, str(staged))


def parse_chunks(
    con: duckdb.DuckDBPyConnection, chunks: list[Chunk], stats: ReadStats, staged: Path,
    queries: PreparedReads | None = None,
) -> list[ChunkSpans]:
    """Each chunk's per-span rows (`parse_chunk`), the small ones read by one query.

    A poll over a directory of pod logs hands out a small chunk from each of hundreds of
    files, and each chunk's query cost ~25 ms of planning and setup for a few rows:
    500 pod logs took 13 CPU-s from the start where the batch read takes 1.7. As the
    batch read does (`small_files`), the small chunks are staged end to end and read as
    one query, each chunk's rows then split off and judged as if read alone.
    """
    maps = [map_chunk(chunk.data, chunk.scan) for chunk in chunks]
    small = [i for i, chunk in enumerate(chunks) if len(chunk.data) <= SMALL_FILE_BYTES]
    answers: dict[int, pa.Table] = {}
    if len(small) > 1:
        got = _read_as_one(con, [(chunks[i], maps[i]) for i in small],
                           staged.with_name("batch.jsonl"), queries)
        if got is not None:
            answers = dict(zip(small, got, strict=True))
    return [parse_chunk(con, chunk, stats, staged, queries, line_map=maps[i],
                        answer=answers.get(i))
            for i, chunk in enumerate(chunks)]


def _read_as_one(
    con: duckdb.DuckDBPyConnection, chunks: list[tuple[Chunk, LineMap]], path: Path,
    queries: PreparedReads | None,
) -> list[pa.Table] | None:
    """The chunks' per-span rows from one query over them staged end to end, each
    chunk's numbered from its line 1, as a batch of small files is read; None when
    they cannot be read as one (each is then read alone)."""
    batch = BatchCopy(path)
    for i, (chunk, line_map) in enumerate(chunks):
        batch.add_data(str(i), chunk.data, line_map)
    batch.close()
    return batch_or_none(con, batch, None, queries, batch_spans)


def parse_chunk(
    con: duckdb.DuckDBPyConnection, chunk: Chunk, stats: ReadStats, staged: Path,
    queries: PreparedReads | None = None, *, line_map: LineMap | None = None,
    answer: pa.Table | None = None,
) -> ChunkSpans:
    """The chunk's per-span rows, its bad lines counted in `stats`; `answer`: its rows
    read already with other chunks' (`parse_chunks`)."""
    local = ReadStats()
    with open(staged, "wb") as out:
        out.write(chunk.data)
    if line_map is None:
        line_map = map_chunk(chunk.data, chunk.scan)
    run = Answer(answer) if answer is not None else _prepared_run(queries, staged)
    # A hole opening a later chunk is a crash's, not a copy-and-truncate's (`judge`).
    table = parse(con, staged, line_map, chunk.name, local, lean=True, window=None,
                  run=run, starts_file=chunk.first_line == 1)
    spans, lines = table.spans()
    shift = chunk.first_line - 1
    local.samples = [BadLine(s.file, s.line + shift, s.reason) for s in local.samples]
    # A note of evidence with no span_id names its line in the file, as batch does (the
    # chunk's own line, "at line 1", was cited), and each kind once per file.
    local.unreadable_files = in_whole_file(local.unreadable_files, shift, stats.unreadable_files)
    local.files = 0
    stream = display_name(chunk.stream)  # as the file is cited: not UTF-8 as \xff escapes
    if stream != chunk.name:
        for counts in (local.lines_by_file, local.bad_by_file):
            if chunk.name in counts:
                counts[stream] = counts.get(stream, 0) + counts.pop(chunk.name)
    stats.merge(local)
    shifted = {k: np.where(v >= 0, v + shift, -1) for k, v in lines.items()}
    return ChunkSpans(chunk.name, spans, shifted)


def span_rows(parts: list[ChunkSpans]) -> SpanRows:
    """Several chunks' span rows, in time order (file order on ties), as plain columns."""
    parts = [p for p in parts if p.spans.num_rows]
    if not parts:
        return SpanRows({c: [] for c in COLUMNS}, 0, 0)
    # Hundreds of thousands of new strings and no cycle: a collection here would walk
    # the rules' whole window state again, for nothing.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _span_rows(parts)
    finally:
        if enabled:
            gc.enable()


def _span_rows(parts: list[ChunkSpans]) -> SpanRows:
    table = pa.concat_tables([p.spans for p in parts])
    lines = {k: np.concatenate([p.lines[k] for p in parts]) for k in parts[0].lines}
    t0 = table["start"].cast(pa.int64()).fill_null(0).to_numpy()
    t1 = table["end"].cast(pa.int64()).fill_null(0).to_numpy()
    # Its first line's own time: `t0` may be earlier (`records.partials._in_time_order`).
    first_time = table["first_time"].cast(pa.int64()).fill_null(0).to_numpy()
    part = np.repeat(np.arange(len(parts)), [p.spans.num_rows for p in parts])
    joint = pc.binary_join_element_wise(table["trace_id"], table["span_id"], "\x00")
    at, depth = _after_callers(table, joint, t0)
    at, own_time = _pieces_by_own_times(joint, at, first_time)
    order = np.lexsort((lines["first_line"], part, own_time, depth, at))
    # Only the columns the rules read are put in order (the spans table has ~25).
    table = table.select([*_AS_IS, *_READ]).take(pa.array(order))
    out: dict[str, list[Any]] = {c: table[c].to_pylist() for c in _AS_IS}
    names = [p.name for p in parts]
    out["file"] = [names[i] for i in part[order].tolist()]
    out["first_line"] = lines["first_line"][order].tolist()
    out["last_line"] = lines["last_line"][order].tolist()
    out["t0"], out["t1"] = t0[order].tolist(), t1[order].tolist()
    out["first_time"] = first_time[order].tolist()
    # Few distinct values: one str object each instead of one per row.
    out["outcome"] = _shared(table["outcome"])
    out["worker"] = _bools(pc.equal(table["side"], WORKER))
    for name in _FLAGS:
        out[name] = _bools(table[name])
    flags = _flags(table, lines["unlinked_line"][order], lines["foreign_line"][order])
    return SpanRows(out, table.num_rows, int(t1.max()), flags, t1[order])


def _after_callers(
    table: pa.Table, joint: pa.ChunkedArray, t0: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's place in time: its start, or its caller's when the caller is a row of
    this batch that started later; and its depth below such a caller, so a caller comes
    first among rows of one time.

    A span starts after its caller. A worker whose clock runs behind stamps its span
    before its caller's start, and taken first, with no caller known yet, it stood for
    its caller at that earlier time: it joined the previous holders of the id, an
    already reported cluster, which then took in every later holder, so their
    duplicates were never printed.
    """
    depth = np.zeros(len(t0), dtype=np.int64)
    up = pc.binary_join_element_wise(table["trace_id"], table["parent_span_id"], "\x00")
    caller = pc.index_in(up, value_set=joint).to_numpy(zero_copy_only=False)
    has = ~np.isnan(caller)
    if not has.any():
        return t0, depth
    rows, callers = np.flatnonzero(has), caller[has].astype(np.int64)
    at = t0.copy()
    for _ in range(MAX_CALLER_DEPTH):  # a worker's worker after its caller's caller
        later, below = np.maximum(at[rows], at[callers]), depth[callers] + 1
        if np.array_equal(later, at[rows]) and np.array_equal(below, depth[rows]):
            break
        at[rows], depth[rows] = later, below
    return at, depth


def _pieces_by_own_times(
    joint: pa.ChunkedArray, at: np.ndarray, first_time: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Pieces of one span in this batch (its lines in a rotation's copy and in the file
    it was copied from) at the earliest piece's place, in the order of their first
    lines' own times (0 for a span of one piece).

    A piece's start is dated back by the duration its end line states: taken by it, the
    piece holding a request's end and last Unlinked line went before the one holding
    its start and first Unlinked line, and the finding printed named that later line.
    """
    codes = pc.dictionary_encode(joint.combine_chunks()).indices
    codes = codes.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    known = codes >= 0
    counts = np.bincount(codes[known], minlength=1)
    pieces = known & (counts[np.maximum(codes, 0)] > 1)
    if not pieces.any():
        return at, np.zeros(len(at), dtype=np.int64)
    earliest = np.full(len(counts), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(earliest, codes[pieces], at[pieces])
    at = at.copy()
    at[pieces] = earliest[codes[pieces]]
    return at, np.where(pieces, first_time, 0)


def _shared(column: pa.ChunkedArray) -> list[str | None]:
    encoded = column.combine_chunks().dictionary_encode()
    values = np.array([*encoded.dictionary.to_pylist(), None], dtype=object)
    codes = encoded.indices.fill_null(len(values) - 1).to_numpy(zero_copy_only=False)
    return list(values[codes].tolist())


def _bools(column: pa.ChunkedArray | pa.Array) -> list[bool]:
    return list(pc.fill_null(column, False).to_numpy(zero_copy_only=False).tolist())


def _flags(table: pa.Table, unlinked: np.ndarray, foreign: np.ndarray) -> dict[int, Flag]:
    """The first Unlinked or foreign-chunk line of each span that has one, by row."""
    # -1: none. A span's first flag line wins, as the rules report a span once.
    pick_foreign = (foreign >= 0) & ((unlinked < 0) | (foreign < unlinked))
    pick_unlinked = (unlinked >= 0) & ~pick_foreign
    rows = np.flatnonzero(pick_unlinked | pick_foreign).tolist()
    if not rows:
        return {}
    at = pa.array(rows, pa.int64())
    texts = table["unlinked"].take(at).to_pylist()
    chunks = table["foreign"].take(at).to_pylist()
    flags = {}
    for row, text, chunk in zip(rows, texts, chunks, strict=True):
        if pick_foreign[row]:
            flags[row] = Flag(FOREIGN_CHUNK, None, chunk, int(foreign[row]))
        else:
            flags[row] = Flag(RESPONSE_UNLINKED, text, None, int(unlinked[row]))
    return flags
