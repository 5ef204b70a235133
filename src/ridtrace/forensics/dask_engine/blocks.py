"""Split log inputs (local paths or fsspec URLs) into newline-aligned blocks and read one.

A block is ``(file, byte range)``. Its boundaries are computed by the task that reads
it, from the file itself, so the client never scans the data: boundary ``k`` is the
start of the line holding byte ``k * block_bytes`` — the same rule the pandas engine's
chunked reader cuts by, so with a block size that is a multiple of its chunk size both
engines parse exactly the same chunks (and keep bad-line samples in the same order).

Line numbers inside a block are counted from 1; the block reports how many lines it
holds, and `ridtrace.forensics.dask_engine.engine` shifts them by the lines of the blocks
before it in the same file. One pass over the data, exact ``file:line`` evidence.
"""

from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, cast

import fsspec
import numpy as np
import pandas as pd
import pyarrow as pa

from ridtrace.forensics.reading.events import events_frame
from ridtrace.forensics.reading.evidence import EvidenceParser, parse_evidence
from ridtrace.forensics.reading.inputs import looks_like_log
from ridtrace.forensics.reading.normalize import normalize
from ridtrace.forensics.reading.reader import (
    ReadStats,
    iter_chunks,
    new_parser,
    parse_chunk,
)
from ridtrace.forensics.reading.schema import READ_FIELDS, read_schema
from ridtrace.forensics.rules.requests import build_requests, epoch_us

_GZIP_MAGIC = b"\x1f\x8b"
_SCAN_STEP = 1 << 20
_SNIFF_BYTES = 4096


@dataclass(frozen=True)
class LogFile:
    """One input file: the name evidence shows, the URL workers open, its size."""

    name: str
    url: str
    size: int
    from_directory: bool = False


@dataclass(frozen=True)
class Block:
    """Block `index` of `file`: the lines starting in ``[index, index + 1) * block_bytes``."""

    part: int
    file_id: int
    file: LogFile
    index: int
    block_bytes: int
    whole: bool = False  # gzip (not splittable) or small: read the file as one block

    @property
    def first(self) -> bool:
        """The block that counts the file (and may decide to skip it)."""
        return self.whole or self.index == 0


@dataclass
class BlockResult:
    """What one block yields: its partial requests and counters, lines still block-relative."""

    partial: pd.DataFrame
    stats: ReadStats
    lines: int = 0
    in_window: int = 0


def plan_blocks(files: Sequence[LogFile], block_bytes: int) -> list[Block]:
    """Blocks of every file, in file order; gzip files are one block each."""
    blocks: list[Block] = []
    for file_id, f in enumerate(files):
        # A file too big for one block is checked here, once: gzip cannot be split, and
        # a non-log file from a directory walk must be skipped by all its blocks at once.
        if f.size <= block_bytes or _whole_file(f):
            blocks.append(Block(len(blocks), file_id, f, 0, block_bytes, whole=True))
            continue
        for index in range(-(-f.size // block_bytes)):
            blocks.append(Block(len(blocks), file_id, f, index, block_bytes))
    return blocks


def _whole_file(f: LogFile) -> bool:
    with fsspec.open(f.url, "rb") as fh:
        stream = cast(Any, fh)
        if cast(bytes, stream.read(2)) == _GZIP_MAGIC:
            return True
        stream.seek(0)
        return f.from_directory and not _looks_like_log(stream)


def _line_start(fh: Any, pos: int, block_bytes: int) -> int:
    """Start of the line holding byte `pos` (just after the last newline before it).

    Searches back at most one block at a time, and carries on from the previous block
    boundary when a line is longer than a block, so each boundary is a pure function
    of the file: the blocks on either side of it agree without talking.
    """
    while pos > 0:
        floor = max(0, pos - block_bytes)
        hi = pos
        while hi > floor:
            lo = max(floor, hi - _SCAN_STEP)
            fh.seek(lo)
            found = cast(bytes, fh.read(hi - lo)).rfind(b"\n")
            if found >= 0:
                return lo + found + 1
            hi = lo
        pos = floor
    return 0


class _Range:
    """A read-only view of ``[start, end)`` whose reads stop at multiples of their size.

    The pandas engine reads a file in fixed-size reads from offset 0; aligning reads to
    the same absolute offsets makes `iter_chunks` cut this block exactly where it cuts
    the whole file.
    """

    def __init__(self, fh: Any, start: int, end: int) -> None:
        self._fh, self._pos, self._end = fh, start, end
        fh.seek(start)

    def read(self, size: int = -1) -> bytes:
        if size < 0:
            size = self._end - self._pos
        want = min(size - self._pos % size if size else 0, self._end - self._pos)
        if want <= 0:
            return b""
        data = cast(bytes, self._fh.read(want))
        self._pos += len(data)
        return data


def _empty_raw() -> pa.Table:
    return read_schema(READ_FIELDS).empty_table()


def empty_partial(names: Sequence[str]) -> pd.DataFrame:
    """The partial-requests frame of no lines: the dtypes every block produces."""
    from ridtrace.forensics.dask_engine.partials import partial_requests

    stats = ReadStats()
    table = normalize(_empty_raw(), np.zeros(0, dtype=np.int64), 0, stats, "")
    return partial_requests(build_requests(events_frame(table, names)), 0)


def _window_count(times: np.ndarray, since_us: int | None, until_us: int | None) -> int:
    if since_us is None and until_us is None:
        return 0
    keep = np.ones(len(times), dtype=bool)
    if since_us is not None:
        keep &= times >= since_us
    if until_us is not None:
        keep &= times < until_us
    return int(keep.sum())


@dataclass
class _Parsed:
    """What a block's read produced so far (kept when a .gz turns out truncated)."""

    pieces: list[pa.Table]
    other: list[np.ndarray]
    last_line: int = 0


def _parse(stream: BinaryIO, block: Block, stats: ReadStats, lean: bool, out: _Parsed) -> None:
    """The pandas engine's per-file loop (`ridtrace.forensics.reading.events`), on one block.

    Lean reads keep only evidence lines as events (plus the other lines' times, for
    window counts), exactly as `read_sources` does, so both engines see the same lines.
    """
    name = block.file.name
    evidence = EvidenceParser() if lean else None
    parser = new_parser(lean=lean)
    for chunk, first_line, count in iter_chunks(stream):
        out.last_line = first_line + count - 1
        if evidence is not None:
            found, times = parse_evidence(evidence, chunk, first_line, stats, name)
            out.other.append(times)
        else:
            found = parse_chunk(parser, chunk, first_line, count, stats, name)
        for table, lines in found:
            out.pieces.append(normalize(table, lines, block.file_id, stats, name))


def read_block(
    block: Block,
    names: Sequence[str],
    *,
    lean: bool,
    since_us: int | None = None,
    until_us: int | None = None,
) -> BlockResult:
    """Read, parse and normalise one block, then collapse it to partial requests.

    Memory is bounded by the block: its events frame is dropped once its requests
    (one row per span seen in the block) are built.
    """
    from ridtrace.forensics.dask_engine.partials import partial_requests

    stats = ReadStats()
    parsed = _Parsed([], [])
    with fsspec.open(block.file.url, "rb") as raw:
        fh = cast(Any, raw)
        head = cast(bytes, fh.read(2))
        fh.seek(0)
        stream: Any = fh
        if head == _GZIP_MAGIC and block.whole:
            stream = gzip.GzipFile(fileobj=fh, mode="rb")
        if block.first and block.file.from_directory and not _looks_like_log(stream):
            stats.skipped_files.append(block.file.name)
            return BlockResult(empty_partial(names), stats)
        if block.first:
            stats.files += 1
        try:
            if not block.whole:
                start = _line_start(fh, block.index * block.block_bytes, block.block_bytes)
                stop = min(block.file.size, (block.index + 1) * block.block_bytes)
                end = _line_start(fh, stop, block.block_bytes) if stop < block.file.size else stop
                stream = _Range(fh, start, end)
            _parse(stream, block, stats, lean, parsed)
        except (OSError, EOFError, zlib.error) as exc:
            # A corrupt or truncated .gz: keep what was read, report the file, go on.
            stats.bad(block.file.name, 0, f"unreadable: {exc}")
    table = pa.concat_tables(parsed.pieces) if parsed.pieces else normalize(
        _empty_raw(), np.zeros(0, dtype=np.int64), block.file_id, stats, block.file.name
    )
    parsed.pieces.clear()
    events = events_frame(table, names)
    del table
    times = np.concatenate([epoch_us(events["time"]), *parsed.other])
    return BlockResult(
        partial_requests(build_requests(events), block.part),
        stats,
        lines=parsed.last_line,
        in_window=_window_count(times, since_us, until_us),
    )


def _looks_like_log(stream: Any) -> bool:
    """The pandas engine's sniff for files found in a directory, on any seekable stream."""
    head = cast(bytes, stream.read(_SNIFF_BYTES))
    stream.seek(0)
    return looks_like_log(cast(BinaryIO, io.BufferedReader(cast(Any, io.BytesIO(head)))))
