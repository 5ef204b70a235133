"""Small log files read in batches: one DuckDB query for many files.

A directory of pod logs holds hundreds of files of a few kilobytes each. Planning the
per-span query costs about 10 ms, running it on such a file about 1 ms: 500 files of
4 KiB took 7.8 s. Read as one query over a batch of files, each file grouped apart,
the plan is made once per batch. The batch's files are copied end to end into one
file for it (`BatchCopy`): DuckDB's reader given the files as a list cost ~1 ms per
file (it grows with the columns read), more than the rest of the batch's query. The rows are
then split per file and numbered as the file's own, and each file goes on as if it had
been read alone (`LogTable`'s `run`).
The views' read of every event (`trace`, `export jaeger`, `audit`) is batched the same
way (`batch_events`, `LogTable`'s `events_run`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, TypeVar

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ridtrace.forensics.reading.connection import PreparedReads, run_sql
from ridtrace.forensics.reading.files import parse, read_source
from ridtrace.forensics.reading.inputs import Source
from ridtrace.forensics.reading.lean import SUSPECT_PACK, lean_spans_sql
from ridtrace.forensics.reading.lines import LineMap, map_blocks
from ridtrace.forensics.reading.plain_copy import Progress, stage
from ridtrace.forensics.reading.scan import FLAGS, Window, source_sql
from ridtrace.forensics.reading.source_open import (
    OpenedSource,
    note_failure,
    note_truncation,
    open_source,
)
from ridtrace.forensics.reading.sql import normalized_select
from ridtrace.forensics.reading.staging import make_dir, release
from ridtrace.forensics.reading.stats import ReadStats
from ridtrace.forensics.reading.table import Answer, LogTable

T = TypeVar("T")

# A file this small is read in a batch; a bigger one's plan is a small part of its read.
SMALL_FILE_BYTES = 1 << 20
# A batch's bounds: enough files that planning is paid rarely, few enough that the
# reading threads share a directory's batches.
BATCH_FILES = 64
BATCH_BYTES = 16 << 20
# Descriptors kept out of a batch's share: Python's own imports, the line maps, a
# decompressed copy, DuckDB's temporary files.
DESCRIPTOR_RESERVE = 16


class BatchMismatch(Exception):
    """A batch's rows did not number each file's rows in one run: read them one by one."""


def plan_reads(
    sources: Sequence[Source], *, batch: bool, readers: int = 1
) -> list[list[int]]:
    """Indices of `sources` by read: runs of small files on disk together, others alone.

    DuckDB holds every file of a batch open while it reads it, and `readers` batches
    are read at once: under a low limit on open files (``ulimit -n 64``, hard) a batch
    of 64 failed with "Too many open files", and the Python import it broke on another
    thread could leave the read waiting forever. Batches are cut to the descriptors left.
    """
    most = batch_files(readers)
    reads: list[list[int]] = []
    run: list[int] = []
    run_bytes = 0
    for i, src in enumerate(sources):
        if not (batch and _small(src)):
            if run:
                reads.append(run)
                run, run_bytes = [], 0
            reads.append([i])
            continue
        if run and (len(run) >= most or run_bytes + src.size > BATCH_BYTES):
            reads.append(run)
            run, run_bytes = [], 0
        run.append(i)
        run_bytes += src.size
    if run:
        reads.append(run)
    return reads


def batch_files(readers: int) -> int:
    """Files to a batch when `readers` batches are open at once, within the spare
    descriptors (less `DESCRIPTOR_RESERVE` for the rest of the read)."""
    from ridtrace.open_file_limit import spare_descriptors

    room = (spare_descriptors() - DESCRIPTOR_RESERVE) // max(1, readers)
    return max(1, min(BATCH_FILES, room))


def _small(src: Source) -> bool:
    return (src.path is not None and src.regular and src.unreadable is None
            and src.size <= SMALL_FILE_BYTES)


_RN_COLUMNS = ("first_rn", "last_rn", "unlinked_rn", "foreign_rn", "deprecated_rn")


class TooLargeForBatch(Exception):
    """The file grew past what a batch copies since it was listed: it is read alone."""


# What a batch copies of a file listed as small: one that grew past it is read alone.
_COPY_LIMIT = 2 * SMALL_FILE_BYTES


class BatchCopy:
    """A batch's plain files copied end to end into one file (``path``), and the last
    row of each in it (``ends``; rows: non-blank lines, which DuckDB's reader yields one
    each). ``broken``: the copy could not be made (no room in the temporary directory),
    and each file is read alone."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.files: list[str] = []
        self.ends: list[int] = []
        self.size = 0  # bytes copied
        self.broken = True
        self._out: BinaryIO | None = None
        if path is not None:
            with contextlib.suppress(OSError):
                self._out = open(path, "wb")  # noqa: SIM115 (closed by `close`)
                self.broken = False

    @property
    def rows(self) -> int:
        """The rows DuckDB's reader yields from the copy, by the files' maps."""
        return self.ends[-1] if self.ends else 0

    def add(self, path: Path, on_bytes: Progress | None = None) -> LineMap:
        """Copy the file at `path` to the end of the batch's file and map its lines.

        A last line without a newline gets one, so the next file's first line is a line
        of its own. Raises `OSError` when the file cannot be read, `TooLargeForBatch`
        when it grew past `_COPY_LIMIT` since it was listed.
        """
        with open(path, "rb") as fh:
            data = fh.read(_COPY_LIMIT + 1)
        if len(data) > _COPY_LIMIT:
            raise TooLargeForBatch(str(path))
        if on_bytes is not None and data:
            on_bytes(len(data))
        # Mapped from the bytes copied: DuckDB reads what was numbered, whatever the
        # file does meanwhile.
        line_map = map_blocks([data])
        self.add_data(str(path), data, line_map)
        return line_map

    def add_data(self, name: str, data: bytes | memoryview, line_map: LineMap) -> None:
        """Add `data` (lines `line_map` numbers) to the end of the batch's file as `name`'s:
        a file's bytes, or a followed file's chunk (`live.parse`)."""
        self.files.append(name)
        self.ends.append((self.ends[-1] if self.ends else 0) + line_map.nonblank)
        self.size += len(data)
        if self._out is not None:
            try:
                self._out.write(data)
                if len(data) and data[-1] != 0x0A:  # a last line without its newline
                    self._out.write(b"\n")
            except OSError:  # no room left for it
                self.broken = True
                self.close()

    def close(self) -> None:
        """Close the batch's file: it is complete, or broken if its last bytes failed."""
        out, self._out = self._out, None
        if out is not None:
            try:
                out.close()
            except OSError:
                self.broken = True


@contextlib.contextmanager
def _batch_copy() -> Iterator[BatchCopy]:
    """A `BatchCopy` in a temporary directory of its own, removed when the block ends."""
    try:
        tmp = make_dir("ridtrace-batch-")
    except OSError:
        yield BatchCopy(None)
        return
    try:
        copy = BatchCopy(tmp / "batch.jsonl")
        try:
            yield copy
        finally:
            copy.close()
    finally:
        release(tmp)


def batch_spans(con: duckdb.DuckDBPyConnection, batch: BatchCopy, window: Window | None,
                prepared: PreparedReads | None = None) -> list[pa.Table]:
    """Each file's per-span rows (`lean.lean_spans_sql`) as a read of it alone gives them.

    Raises `BatchMismatch` when a file's rows are not one unbroken run of the batch's
    numbering; the caller then reads the files one by one. `prepared`: the reading
    thread's prepared queries, else the query is planned anew.
    """
    source = source_sql(str(batch.path), lean=True, window=window, several=True)
    got = _run(con, prepared, lean_spans_sql(source, by_file=True), batch)
    # Every row is in one group: as many rows as the files' maps count, or the rows
    # were not the files' non-blank lines and each file's numbers would be off.
    if int(pc.sum(got["lines"]).as_py() or 0) != batch.rows:
        raise BatchMismatch(batch.files[0])
    return split_by_file(got, batch.files)


def _run(con: duckdb.DuckDBPyConnection, prepared: PreparedReads | None, sql: str,
         batch: BatchCopy) -> pa.Table:
    if prepared is None:
        return run_sql(con, sql, batch.ends)
    return prepared.arrow(sql, str(batch.path), batch.ends)


def batch_events(con: duckdb.DuckDBPyConnection, batch: BatchCopy, window: Window | None,
                 prepared: PreparedReads | None = None) -> list[pa.Table]:
    """Each file's ordered event rows (`LogTable`'s events query) as a read of it alone
    gives them, numbered from its line 1.

    Raises `BatchMismatch` when a file's rows are not one unbroken run of the batch's
    numbering; the caller then reads the files one by one. `prepared` as for `batch_spans`.
    """
    paths = batch.files
    source = source_sql(str(batch.path), lean=False, window=window, several=True)
    sql = normalized_select(f"({source})", keep=(*FLAGS, "_file")) + " ORDER BY rn"
    got = _run(con, prepared, sql, batch)
    if len(got) != batch.rows:
        raise BatchMismatch(paths[0])
    file = got["_file"].to_numpy().astype(np.int64)
    rn = got["rn"].to_numpy()
    if len(file) and bool((np.diff(file) < 0).any()):
        raise BatchMismatch(paths[int(np.flatnonzero(np.diff(file) < 0)[0])])
    bounds = np.searchsorted(file, np.arange(len(paths) + 1))
    shift = np.zeros(len(got), dtype=np.int64)
    for i in range(len(paths)):
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        if lo == hi:
            continue  # no line at all (empty, or blank lines only)
        if int(rn[hi - 1]) - int(rn[lo]) + 1 != hi - lo:
            raise BatchMismatch(paths[i])
        shift[lo:hi] = int(rn[lo]) - 1
    local = got.drop_columns(["_file"])
    local = local.set_column(0, "rn", pc.subtract(local["rn"], pa.array(shift)))
    return [local.slice(int(bounds[i]), int(bounds[i + 1] - bounds[i]))
            for i in range(len(paths))]


def split_by_file(got: pa.Table, paths: Sequence[str]) -> list[pa.Table]:
    """A batch's per-span rows (with ``_file``), per file and numbered from its line 1."""
    file = got["_file"].to_numpy().astype(np.int64)
    first = got["first_rn"].to_numpy()
    # By file, and within a file in first-seen order: each file's `LogTable` then keeps
    # its span rows as a slice of its part, not one more `take` per file.
    order = np.lexsort((first, file))
    bounds = np.searchsorted(file[order], np.arange(len(paths) + 1))
    last = got["last_rn"].to_numpy()
    lines = got["lines"].to_numpy()
    start = np.zeros(len(got), dtype=np.int64)
    for i in range(len(paths)):
        rows = order[bounds[i]:bounds[i + 1]]
        if not len(rows):
            continue  # no line at all (empty, or blank lines only)
        begin, end = int(first[rows].min()), int(last[rows].max())
        # Every row is in one group (`source_sql` keeps them all): the groups' counts add
        # up to the file's rows, which must be the run between its first and last row.
        if int(lines[rows].sum()) != end - begin + 1:
            raise BatchMismatch(paths[i])
        start[rows] = begin - 1
    # One take puts the files in order; each file's rows are then a zero-copy slice.
    local = got.drop_columns(["_file"]).take(pa.array(order))
    shift = pa.array(start[order])
    for name in _RN_COLUMNS:
        at = local.column_names.index(name)
        local = local.set_column(at, name, pc.subtract(local[name], shift))
    if "_suspects" in local.column_names:
        at = local.column_names.index("_suspects")
        local = local.set_column(at, "_suspects",
                                 _shift_suspects(local["_suspects"], start[order]))
    return [local.slice(bounds[i], bounds[i + 1] - bounds[i]) for i in range(len(paths))]


def _shift_suspects(column: pa.ChunkedArray, start: np.ndarray) -> pa.Array:
    """Each row's suspect lines (`lean.SUSPECT_PACK`) numbered from its file's line 1."""
    lists = column.combine_chunks()
    lengths = pc.fill_null(pc.list_value_length(lists), 0).to_numpy()
    values = pc.list_flatten(lists).to_numpy() - np.repeat(start * SUSPECT_PACK, lengths)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values, pa.int64()),
                                    mask=pc.is_null(lists))


def read_batch(
    con: duckdb.DuckDBPyConnection,
    sources: Sequence[Source],
    use: Callable[[int, LogTable], T],
    *,
    window: Window | None = None,
    on_bytes: Progress | None = None,
    events: bool = False,
    prepared: PreparedReads | None = None,
) -> list[tuple[T | None, ReadStats]]:
    """``use(i, table)`` for each source's lean read (`i` its place in `sources`), with
    the counters of each, in source order.

    Each source is skipped, sniffed and numbered as `files.read_source` does it; the
    plain files on disk among them are parsed by one query, any other alone. `use` may
    ask a table for its spans (from the batch) or read the file again (its events).
    `events`: a full read instead, whose tables answer `LogTable.events` from the batch.
    `prepared`: the reading thread's prepared queries, which the batch's query joins.
    """
    stats = [ReadStats() for _ in sources]
    results: list[T | None] = [None] * len(sources)
    plain: dict[int, tuple[OpenedSource, Path, LineMap]] = {}
    alone: list[int] = []
    staged = contextlib.ExitStack()  # decoded copies, kept until their tables are used
    try:
        with _batch_copy() as batch:
            for i, src in enumerate(sources):
                opened = open_source(src, stats[i])
                if opened is None:
                    continue
                if src.path is None:  # standard input: its own read, afresh
                    opened.raw.close()
                    stats[i] = ReadStats()
                    alone.append(i)
                    continue
                try:
                    if opened.in_place:
                        plain[i] = (opened, src.path, batch.add(src.path, on_bytes))
                    else:  # decoded (a rotated .gz, a container's wrapped log)
                        got = None if batch.broken else _staged_into(
                            batch, staged, opened, src.name, stats[i], on_bytes)
                        if got is None:  # read alone, afresh, as the plain file that grew
                            raise TooLargeForBatch(src.name)
                        plain[i] = got
                except TooLargeForBatch:
                    opened.raw.close()
                    stats[i] = ReadStats()
                    alone.append(i)
                except OSError as exc:
                    opened.raw.close()
                    note_failure(src, exc, stats[i])
            batch.close()
            tables = batch_or_none(con, batch, window, prepared,
                                    batch_events if events else batch_spans)
        for at, (i, (opened, path, line_map)) in enumerate(plain.items()):
            src = sources[i]
            if tables is None:
                alone.append(i)
                stats[i] = ReadStats()
                continue
            try:
                answer = Answer(tables[at])
                results[i] = use(i, parse(con, path, line_map, src.name, stats[i], not events,
                                          window, run=None if events else answer,
                                          events_run=answer if events else None))
                note_truncation(src, opened, stats[i])
            except (OSError, duckdb.OutOfMemoryException) as exc:
                note_failure(src, exc, stats[i])
    finally:
        for opened, _, _ in plain.values():
            opened.raw.close()
        staged.close()
    for i in sorted(alone):
        results[i] = read_source(con, sources[i], _at(use, i), stats=stats[i], lean=not events,
                                 window=window, on_bytes=on_bytes)
    return list(zip(results, stats, strict=True))


def _staged_into(
    batch: BatchCopy, staged: contextlib.ExitStack, opened: OpenedSource, name: str,
    stats: ReadStats, on_bytes: Progress | None,
) -> tuple[OpenedSource, Path, LineMap] | None:
    """A decoded source (a rotated ``.gz``, a container's wrapped log) staged to a copy
    of its own, as `files.read_source` stages it, and added to the batch as that copy.

    Read alone, each cost a query of its own: a pod-log tree of 5,004 small gzip files
    took 160 s where the same files uncompressed took 7.7 s. None when the decoded copy
    is larger than a batch takes, or cannot be made (no room): it is read alone.
    """
    if batch.size >= BATCH_BYTES:  # decoded bytes, as the batch's copy holds them
        return None
    try:
        folder = make_dir("ridtrace-small-")
    except OSError:
        return None
    staged.callback(release, folder)
    path = folder / "decoded.jsonl"
    try:
        with open(path, "wb") as out:
            # Stopped at the limit: a small gzip of hundreds of MiB was decoded here in
            # full, then again when read alone.
            line_map = stage(opened.head, opened.decoded, _Capped(out, _COPY_LIMIT), name,
                             stats, on_bytes, opened.unwrap)
        data = path.read_bytes()
    except (OSError, TooLargeForBatch):
        release(folder)
        return None
    batch.add_data(name, data, line_map)
    return opened, path, line_map


class _Capped:
    """A file written to at most `limit` bytes; `TooLargeForBatch` past them."""

    def __init__(self, out: BinaryIO, limit: int) -> None:
        self._out, self._left = out, limit

    def write(self, data: bytes, /) -> int:
        self._left -= len(data)
        if self._left < 0:
            raise TooLargeForBatch("decoded copy over the batch's limit")
        return self._out.write(data)


def _at(use: Callable[[int, LogTable], T], i: int) -> Callable[[LogTable], T]:
    return lambda table: use(i, table)


def batch_or_none(
    con: duckdb.DuckDBPyConnection, batch: BatchCopy, window: Window | None,
    prepared: PreparedReads | None, query: Callable[..., list[pa.Table]],
) -> list[pa.Table] | None:
    """The batch's per-file tables, or None to read each file alone: DuckDB could not
    read them as one (a line over its object size, memory) or did not number them in
    one run each, or the batch's copy could not be made."""
    if not batch.files:
        return []
    if batch.broken:
        return None
    with contextlib.suppress(BatchMismatch, duckdb.Error):
        return query(con, batch, window, prepared=prepared)
    return None
