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

import os
import tempfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import duckdb
import fsspec
import pandas as pd
from fsspec.implementations.local import LocalFileSystem

from ridtrace.forensics.reading.archives import TAR_ARCHIVE, ZIP_ARCHIVE, is_tar, is_zip_of_logs
from ridtrace.forensics.reading.connection import shared_cursor
from ridtrace.forensics.reading.decoding import DecodedStream, compression_of, wide_text_codec
from ridtrace.forensics.reading.files import parse
from ridtrace.forensics.reading.inputs import SNIFF_BYTES
from ridtrace.forensics.reading.log_names import ignore_reason
from ridtrace.forensics.reading.plain_copy import stage
from ridtrace.forensics.reading.read_on import walked_file_verdict
from ridtrace.forensics.reading.source_open import DELETED
from ridtrace.forensics.reading.stats import FileNote, ReadStats, truncated_while_read
from ridtrace.forensics.reading.unwrap import wrapper_of
from ridtrace.forensics.records.read import partial_of
from ridtrace.forensics.records.spans import empty_partial as _empty

_SCAN_STEP = 1 << 20


@dataclass(frozen=True)
class LogFile:
    """One input file: the name evidence shows, the URL workers open, its size."""

    name: str
    url: str
    size: int
    from_directory: bool = False
    # Why a walk's entry is not read (a pipe, a broken link, a file it may not open),
    # and whether a log may be lost with it (then it is listed as unreadable).
    skip: tuple[str, bool] | None = None


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
        if f.skip is not None or f.size <= block_bytes or _whole_file(f):
            blocks.append(Block(len(blocks), file_id, f, 0, block_bytes, whole=True))
            continue
        for index in range(-(-f.size // block_bytes)):
            blocks.append(Block(len(blocks), file_id, f, index, block_bytes))
    return blocks


def opened_file(url: str) -> Any:
    """`url` as an fsspec file; a local file's (a path, no scheme) opened by its path.

    fsspec reads ``::`` in a URL as a chain of filesystems: ``logs/front::end.jsonl``
    opened ``logs/front``, another log read under its name, or none (exit 4)."""
    if "://" not in url:
        return fsspec.core.OpenFile(LocalFileSystem(), url, "rb")
    return fsspec.open(url, "rb")


def _whole_file(f: LogFile) -> bool:
    with opened_file(f.url) as fh:
        stream = cast(Any, fh)
        head = cast(bytes, stream.read(SNIFF_BYTES))
        if compression_of(head) is not None or wide_text_codec(head) is not None:
            return True  # a compressed or UTF-16 file cannot be split at a newline byte
        if wrapper_of(head) is not None:  # a record's parts may straddle a block's edge
            return True
        if is_tar(head) or is_zip_of_logs(head):  # its first block names it unreadable
            return True
        # A file its first block will ignore is one block, so no other block reads it.
        whole = len(head) < SNIFF_BYTES
        return f.from_directory and ignore_reason(f.name, head, whole=whole) is not None


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
    """A read-only view of ``[start, end)`` of a file, for staging one block."""

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


def empty_partial(names: Sequence[str], *, lean: bool = False) -> pd.DataFrame:
    """The partial-requests frame of no lines: the dtypes every block produces (`lean`:
    every block of a lean read)."""
    del names  # file names travel as codes in partials
    return _empty(lean=lean)


def read_block(
    block: Block,
    names: Sequence[str],
    *,
    lean: bool,
    since_us: int | None = None,
    until_us: int | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> BlockResult:
    """Read one block through the local engine's stages into partial requests.

    The block's bytes (gunzipped when the file is compressed) are staged to a local
    file, numbered, parsed by DuckDB and aggregated per span, exactly as a whole file
    is; memory is bounded by the block.
    """
    del names
    stats = ReadStats()
    window = None if since_us is None and until_us is None else (since_us, until_us)
    if block.file.skip is not None:
        reason, loses_a_log = block.file.skip
        notes = stats.unreadable_files if loses_a_log else stats.ignored_files
        notes.append(FileNote(block.file.name, reason))
        return BlockResult(_empty(lean=lean), stats)
    try:
        opened = opened_file(block.file.url)
        raw = opened.open()
    except OSError as exc:  # gone since the client listed it, as the local engine notes it
        stats.unreadable_files.append(FileNote(block.file.name, _not_opened(exc)))
        return BlockResult(_empty(lean=lean), stats)
    try:
        return _read_opened(block, opened, raw, stats, lean, window, con)
    except OSError as exc:  # its storage's error, or the worker's staging disk full
        stats.unreadable_files.append(FileNote(block.file.name, f"read failed: {exc}"))
        return BlockResult(_empty(lean=lean), stats)


class StorageReadError(OSError):
    """A read of a log that its storage failed (an HTTP 503 mid-file, a server that
    serves no byte ranges): the file read in part, not a crash of ridtrace's."""


class _StorageReads:
    """A log's reads, seeks and tells, an error of its storage's raised as
    `StorageReadError`: fsspec's HTTP file raised aiohttp's and its own errors, which
    came out as a traceback and "internal error (exit 4)"."""

    def __init__(self, fh: Any) -> None:
        self._fh = fh

    def read(self, size: int = -1) -> Any:
        return self._call(self._fh.read, size)

    def seek(self, offset: int, whence: int = 0) -> Any:
        return self._call(self._fh.seek, offset, whence)

    def tell(self) -> Any:
        return self._call(self._fh.tell)

    @staticmethod
    def _call(method: Any, *args: Any) -> Any:
        try:
            return method(*args)
        except (OSError, EOFError, zlib.error):  # the local engine's to judge, as ever
            raise
        except Exception as exc:
            raise StorageReadError(" ".join(str(exc).split()) or type(exc).__name__) from exc


def _read_opened(
    block: Block, opened: Any, raw: Any, stats: ReadStats, lean: bool,
    window: tuple[int | None, int | None] | None, con: duckdb.DuckDBPyConnection | None,
) -> BlockResult:
    with raw:
        fh = cast(Any, _StorageReads(raw))
        stream: Any = fh
        if block.whole:
            stream = DecodedStream(fh)
            if stream.unsupported is not None:
                stats.unreadable_files.append(FileNote(block.file.name, stream.unsupported))
                return BlockResult(_empty(lean=lean), stats)
        elif block.index == 0 and cast(bytes, fh.read(3)) == b"\xef\xbb\xbf":
            pass  # a BOM at the start of a split file: the range below starts past it
        else:
            fh.seek(0)
        head = b""
        unwrap = None
        if block.first:
            head = stream.read(SNIFF_BYTES)
            if is_zip_of_logs(head):
                stats.unreadable_files.append(FileNote(block.file.name, ZIP_ARCHIVE))
                return BlockResult(_empty(lean=lean), stats)
            # Only a whole-file block is wrapped: `_whole_file` keeps such a file whole.
            unwrap = wrapper_of(head) if block.whole else None
            if block.file.from_directory:
                # A file it may pass over is one block (`_whole_file`): read on here.
                ignored, head, unwrap = walked_file_verdict(block.file.name, head, unwrap,
                                                            stream.read)
                if ignored is not None:
                    stats.ignored_files.append(ignored)
                    return BlockResult(_empty(lean=lean), stats)
            if is_tar(head):
                stats.unreadable_files.append(FileNote(block.file.name, TAR_ARCHIVE))
                return BlockResult(_empty(lean=lean), stats)
            stats.files += 1
        starts_file = block.first
        if not block.whole:
            start = _line_start(fh, block.index * block.block_bytes, block.block_bytes)
            if block.index == 0:
                start = max(start, fh.tell() - len(head))
            elif start == 0:
                # The file's first line reaches past this block's start (copy-and-truncate's
                # hole before it, under a writer that does not append): this block holds
                # line 1, and its hole is judged as a file's first line's, not a crash's
                # (exit 3 where the local engine reads the log clean).
                starts_file = True
                fh.seek(0)
                if cast(bytes, fh.read(3)) == b"\xef\xbb\xbf":
                    start = 3
            stop = min(block.file.size, (block.index + 1) * block.block_bytes)
            end = _line_start(fh, stop, block.block_bytes) if stop < block.file.size else stop
            head = b""
            stream = _Range(fh, start, end)
        own = con is None
        con = shared_cursor() if con is None else con
        try:
            with tempfile.TemporaryDirectory(prefix="ridtrace-block-", dir=_staging_root()) as tmp:
                staged = Path(tmp) / "block.jsonl"
                with open(staged, "wb") as out:
                    line_map = stage(head, stream, out, block.file.name, stats, unwrap=unwrap)
                table = parse(con, staged, line_map, block.file.name, stats, lean,
                              window, starts_file=starts_file)
                partial = partial_of(table, block.file_id, block.part)
                in_window = table.window_lines
        finally:
            if own:
                con.close()
        _note_if_truncated(opened, block.file, stats)
    return BlockResult(partial, stats, lines=line_map.lines, in_window=in_window)


UNREADABLE_ON_WORKER = ("cannot read it on a Dask worker: permission denied (the client "
                       "can: the workers must run as a user who may read the logs)")


def _not_opened(exc: OSError) -> str:
    """Why a worker could not open a log the client listed, worded as the local engine
    words it (the raw error named the worker's absolute path)."""
    if isinstance(exc, FileNotFoundError):
        return DELETED
    if isinstance(exc, PermissionError):
        return UNREADABLE_ON_WORKER
    return f"cannot read it: {exc.strerror or exc}"


def _staging_root() -> str | None:
    """Where a worker stages its block: its own local directory, which the next worker
    started there removes when this one's process was killed (the OOM killer), where a
    copy under $TMPDIR stayed for good; $TMPDIR outside a worker."""
    try:
        from distributed import get_worker

        return str(get_worker().local_directory)
    except (ImportError, ValueError, AttributeError):
        return None


UNSEEN = ("no such file on a Dask worker, though the client finds it there: every worker "
          "must see the logs at the same path (a shared filesystem or object storage)")


def name_unseen(stats: ReadStats, files: Sequence[LogFile]) -> None:
    """Say why a local file a worker found deleted is still there for the client.

    A worker on a host where the logs are not mounted finds no file at the path, which
    read as "deleted since it was listed (a rotation?): read the logs again": reading
    again gave the same, and the cause went unsaid.
    """
    paths = {f.name: f.url for f in files if "://" not in f.url}
    for i, note in enumerate(stats.unreadable_files):
        path = paths.get(note.file)
        if note.reason == DELETED and path is not None and os.path.isfile(path):
            stats.unreadable_files[i] = FileNote(note.file, UNSEEN)


def _note_if_truncated(opened: Any, f: LogFile, stats: ReadStats) -> None:
    """Note `f` as unreadable when it is shorter now than when its blocks were planned
    (logrotate's copytruncate beside the read), as the local engine notes a file that
    shrank while it was read. Every block checks; the notes merge to one per file."""
    try:
        now = int(opened.fs.size(opened.path))
    except (OSError, TypeError, ValueError):
        return  # gone, or a store that cannot say: nothing to compare
    if now < f.size:
        stats.unreadable_files.append(FileNote(f.name, truncated_while_read(f.size)))
