"""Blocks as Dask tasks: a split file's block alone, whole small files many to a task.

A directory of pod logs is hundreds of files of a few kilobytes, each a block of its
own. A task per block spent more on its own start (a DuckDB database, a query plan, a
pandas frame, a staged copy) than on its file: 500 pod logs took minutes. A task now
reads a run of whole files, and those on local disk through the local engine's batched
read (`reading.small_files.read_batch`: one query for the run), so both engines read
them alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from ridtrace.forensics.dask_engine.blocks import Block, read_block
from ridtrace.forensics.reading.connection import shared_cursor
from ridtrace.forensics.reading.inputs import Source
from ridtrace.forensics.reading.small_files import read_batch
from ridtrace.forensics.reading.stats import ReadStats
from ridtrace.forensics.records.read import pieces_partial, span_piece
from ridtrace.forensics.records.spans import empty_partial

if TYPE_CHECKING:
    import duckdb

    from ridtrace.forensics.reading.scan import Window
    from ridtrace.forensics.reading.table import LogTable
    from ridtrace.forensics.records.pieces import SpanPiece

# Whole files read by one task at most (and at most a block's worth of bytes).
GROUP_FILES = 64

Counters = tuple[ReadStats, int, int]  # stats, lines, lines in the --since/--until window


def group_blocks(blocks: Sequence[Block], block_bytes: int) -> list[list[Block]]:
    """The blocks as tasks: consecutive whole files smaller than a block together, up to
    `GROUP_FILES` of them or a block's worth of bytes; any other block alone."""
    groups: list[list[Block]] = []
    run: list[Block] = []
    run_bytes = 0
    for block in blocks:
        small = block.whole and block.file.size < block_bytes
        if run and (not small or len(run) >= GROUP_FILES
                    or run_bytes + block.file.size > block_bytes):
            groups.append(run)
            run, run_bytes = [], 0
        if not small:
            groups.append([block])
            continue
        run.append(block)
        run_bytes += block.file.size
    if run:
        groups.append(run)
    return groups


@dataclass
class GroupResult:
    """One task's blocks: their partial requests in one frame, and each block's counters
    (in the group's order; lines still block-relative)."""

    partial: pd.DataFrame
    counters: list[Counters]


def read_blocks(
    group: Sequence[Block],
    names: Sequence[str],
    *,
    lean: bool,
    since_us: int | None = None,
    until_us: int | None = None,
) -> GroupResult:
    """Each block of `group` read on one DuckDB connection: the local whole files of an
    analysis read as the local engine batches them, any other by `read_block`."""
    window = None if since_us is None and until_us is None else (since_us, until_us)
    con = shared_cursor()
    try:
        local = [b for b in group if lean and _local_whole_file(b)]
        pieces, counters = _read_local(con, local, window)
        frames: list[pd.DataFrame] = []
        for block in group:
            if block.part in counters:
                continue
            result = read_block(block, names, lean=lean, since_us=since_us,
                                until_us=until_us, con=con)
            frames.append(result.partial)
            counters[block.part] = (result.stats, result.lines, result.in_window)
    finally:
        con.close()
    if pieces:
        frames.insert(0, pieces_partial(pieces))
    if not frames:  # every file skipped
        frames = [empty_partial(lean=lean)]
    partial = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    return GroupResult(partial, [counters[block.part] for block in group])


def _local_whole_file(block: Block) -> bool:
    # A URL names a store the local reader cannot open; a skipped file is noted by
    # read_block, as before.
    return block.whole and block.file.skip is None and "://" not in block.file.url


def _read_local(
    con: duckdb.DuckDBPyConnection, blocks: Sequence[Block], window: Window | None
) -> tuple[list[SpanPiece], dict[int, Counters]]:
    """The local whole files' span pieces, and each block's counters by its part."""
    if not blocks:
        return [], {}
    sources = [Source(b.file.name, Path(b.file.url), b.file.size, b.file.from_directory)
               for b in blocks]

    def use(i: int, table: LogTable) -> tuple[SpanPiece, int]:
        piece = span_piece(table, blocks[i].file_id, blocks[i].part)
        return piece, table.window_lines

    pieces: list[SpanPiece] = []
    counters: dict[int, Counters] = {}
    for block, (got, stats) in zip(blocks, read_batch(con, sources, use, window=window),
                                   strict=True):
        in_window = 0
        if got is not None:
            pieces.append(got[0])
            in_window = got[1]
        # A whole file's line count shifts no other block's lines: 0 is as good.
        counters[block.part] = (stats, 0, in_window)
    return pieces, counters
