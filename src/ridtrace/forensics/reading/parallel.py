"""Many log sources read side by side: the reading threads, their cursors, the order.

DuckDB numbers a file's rows in order, which keeps one file's scan on one thread;
reading several files at once, each on its own cursor, uses the other cores. Small
files go in batches (`reading.small_files`), one query each.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import duckdb

from ridtrace.forensics.reading import staging
from ridtrace.forensics.reading.connection import (
    PreparedReads,
    connect,
    shared_cursor,
    usable_cpus,
)
from ridtrace.forensics.reading.files import read_source
from ridtrace.forensics.reading.inputs import Source
from ridtrace.forensics.reading.plain_copy import Progress
from ridtrace.forensics.reading.scan import Window
from ridtrace.forensics.reading.small_files import plan_reads, read_batch
from ridtrace.forensics.reading.stats import ReadStats
from ridtrace.forensics.reading.table import LogTable

T = TypeVar("T")
R = TypeVar("R")
P = TypeVar("P")


@dataclass(frozen=True)
class Batched(Generic[P, T]):
    """How a batch of small files (`reading.small_files`) makes one result: each file's
    piece (`piece(table, file_id)`), then the batch's pieces gathered in source order."""

    piece: Callable[[LogTable, int], P]
    gather: Callable[[list[P]], T]
    # The pieces are of a full read's events (`LogTable.events`), not of a lean read's spans.
    events: bool = False


@dataclass
class ReadAll(Generic[T]):
    """What `read_all` collected: one result per source read (per batch of small files,
    with `Batched`), the counters, the lines in the window."""

    results: list[T]
    stats: ReadStats
    window_lines: int | None


def read_all(
    sources: Sequence[Source],
    use: Callable[[LogTable, int], T],
    *,
    lean: bool,
    window: Window | None = None,
    on_bytes: Progress | None = None,
    batched: Batched[Any, T] | None = None,
) -> ReadAll[T]:
    """`use(table, file_id)` for every source read; sources are read side by side.

    Counters merge in source order, so samples come out as a one-by-one read gives them.
    Ignored and unreadable sources give no result; they are in the counters.
    `batched` (a lean read, or a full one of events): small files are parsed many to a
    query, and each batch gives one result.
    """
    # A read of its own: an interrupted one before it in this process (a library
    # caller's, a test's) closed the staging of copies for its own threads.
    staging.reopen()
    most_width = max(1, min(usable_cpus(), _PARALLEL_FILES))
    reads = plan_reads(sources, batch=batched is not None and (lean or batched.events),
                       readers=most_width)
    width = min(len(reads), most_width) or 1
    if _small_input(sources):
        # Opening a database (40-60 ms of CPU) cost more than reading a few small files;
        # what DuckDB keeps of so small a read in the shared one is small too.
        con = shared_cursor()
    else:
        con = connect()
        # A file's numbered scan runs on the thread that asked for it; DuckDB's own
        # workers on top of `width` reading threads only crowd the cores, each with its
        # own buffers and hash tables: 5M lines in 3 files took ~25 % more page faults
        # with them. A database of its own is closed after the read, and what DuckDB
        # held for it freed before the rules run.
        con.execute(f"SET threads = {max(1, usable_cpus() // width)}")
        if max((s.size for s in sources), default=0) >= _LARGE_FILE_BYTES:
            # DuckDB keeps what its queries free for later ones until the database
            # closes: ~60-70 MiB of `analyze`'s peak on the incident set, whose four
            # files are 104-168 MiB. Handed back at once, each query faults its
            # buffers in anew: 3-8 % more wall time there, and 10 % on 500 small
            # files, whose memory is the interpreter's (docs/performance.md,
            # thirty-second session).
            con.execute(f"SET allocator_bulk_deallocation_flush_threshold = '{_FLUSH_FREED}'")
    # One cursor per reading thread, kept across its files with its prepared queries.
    local = threading.local()
    cursors: list[duckdb.DuckDBPyConnection] = []
    opened = threading.Lock()

    def reader() -> tuple[duckdb.DuckDBPyConnection, PreparedReads]:
        if not hasattr(local, "cursor"):
            local.cursor = con.cursor()
            local.prepared = PreparedReads(local.cursor)
            with opened:
                cursors.append(local.cursor)
        return local.cursor, local.prepared

    def counted(file_id: int, table: LogTable) -> tuple[T, int]:
        return use(table, file_id), table.window_lines

    def one(ids: list[int]) -> list[tuple[tuple[T, int] | None, ReadStats]]:
        cursor, prepared = reader()
        if len(ids) > 1 and batched is not None:
            return [_batch_result(cursor, [sources[i] for i in ids], ids, batched,
                                  window=window, on_bytes=on_bytes, prepared=prepared)]
        stats = ReadStats()
        got = read_source(cursor, sources[ids[0]], lambda table: counted(ids[0], table),
                          stats=stats, lean=lean, window=window, on_bytes=on_bytes,
                          prepared=prepared)
        return [(got, stats)]

    total = ReadStats()
    results: list[T] = []
    in_window = 0
    pool = ThreadPoolExecutor(max_workers=width, thread_name_prefix="ridtrace-read")
    try:
        jobs = {r: pool.submit(one, reads[r]) for r in _start_order(sources, reads)}
        for r in range(len(reads)):  # results and counters in source order
            for got, stats in _result(jobs[r]):
                total.merge(stats)
                if got is not None:
                    results.append(got[0])
                    in_window += got[1]
    except BaseException:
        # Ctrl-C (or a failed file): stop now. Waiting for the pool, as its `with` did,
        # read every file not started yet first, and never ended while a reading thread
        # was blocked on a pipe whose writer stays open. The threads' queries are
        # interrupted; the cursors are theirs until they return, so they stay open.
        pool.shutdown(wait=False, cancel_futures=True)
        for cursor in cursors:
            with contextlib.suppress(Exception):
                cursor.interrupt()
        raise
    pool.shutdown()
    for cursor in cursors:
        cursor.close()
    con.close()
    return ReadAll(results, total, in_window if window is not None else None)


def _batch_result(
    cursor: duckdb.DuckDBPyConnection, batch: list[Source], ids: list[int],
    batched: Batched[P, T], *, window: Window | None, on_bytes: Progress | None,
    prepared: PreparedReads,
) -> tuple[tuple[T, int] | None, ReadStats]:
    """One batch of small files as one result, and its files' counters in their order."""
    outs = read_batch(
        cursor, batch, lambda at, table: (batched.piece(table, ids[at]), table.window_lines),
        window=window, on_bytes=on_bytes, events=batched.events, prepared=prepared,
    )
    stats = ReadStats()
    for _, one in outs:
        stats.merge(one)
    read = [got for got, _ in outs if got is not None]
    if not read:
        return None, stats
    return (batched.gather([piece for piece, _ in read]), sum(n for _, n in read)), stats


def _start_order(sources: Sequence[Source], reads: list[list[int]]) -> list[int]:
    """The reads (indices into `reads`) in the order to start them: the largest first.

    A file's query runs on one core, so the read lasts at least as long as its largest
    file; started last, behind files the other threads had read, it ran alone: a
    directory whose 898 MiB frontend log sorted after two 582 MiB worker logs took 9.1 s
    to analyze, 7.8 s started largest first (docs/performance.md). A source of
    unknown size (a pipe, standard input) starts first, as its writer may be waiting.
    A compressed file counts by its size on disk.
    """
    def size(read: list[int]) -> tuple[bool, int]:
        if any(not sources[i].regular for i in read):
            return (False, 0)
        return (True, -sum(sources[i].size for i in read))

    return sorted(range(len(reads)), key=lambda r: size(reads[r]))


# Files read at once: enough to fill this machine's cores, few enough to bound memory.
_PARALLEL_FILES = 4

# Freed memory DuckDB may keep for later queries before it gives it back to the system,
# in a read of at least one file this large (its size on disk).
_FLUSH_FREED = "1MB"
_LARGE_FILE_BYTES = 32 << 20

# Input up to which a read runs on the process's shared DuckDB database: files on disk
# whose sizes (compressed, for a compressed file) add up to no more than this.
_SHARED_DATABASE_BYTES = 8 << 20


def _small_input(sources: Sequence[Source]) -> bool:
    return (all(s.path is not None and s.regular for s in sources)
            and sum(s.size for s in sources) <= _SHARED_DATABASE_BYTES)


# How often the main thread, waiting for a file, looks for a signal (Ctrl-C, SIGTERM).
_SIGNAL_CHECK_SECONDS = 0.1


def _result(job: Future[R]) -> R:
    """`job`'s result, waited for in short steps.

    The kernel may deliver Ctrl-C to any thread. Delivered to a reading thread (blocked
    on a pipe) or one of DuckDB's, it did not wake the main thread's untimed wait, so
    Python never ran its handler: 5 to 19 runs in 100 of `analyze` on a pipe ignored
    Ctrl-C until the writer closed. A timed wait returns to the interpreter, which runs it.
    """
    while True:
        try:
            return job.result(timeout=_SIGNAL_CHECK_SECONDS)
        except TimeoutError:
            if job.done():  # the job's own TimeoutError
                raise
