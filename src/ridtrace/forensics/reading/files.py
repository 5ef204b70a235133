"""One log source from bytes to typed rows: sniff, decode, number the lines, parse.

A plain file on disk is parsed in place while its lines are numbered on another
thread (DuckDB releases the GIL). Anything else (gzip, a UTF-8 BOM, standard input,
a byte range of a bigger file) is first decoded to a temporary plain file, numbered
on the way, so every source takes the same parse.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

import duckdb
import pyarrow as pa

from ridtrace.forensics.reading.connection import PreparedReads, connect, usable_cpus
from ridtrace.forensics.reading.decoding import BOM, DecodedStream
from ridtrace.forensics.reading.inputs import (
    SNIFF_BYTES,
    Source,
    not_regular_reason,
    open_raw,
)
from ridtrace.forensics.reading.lines import LineMap, fetch_lines, map_file
from ridtrace.forensics.reading.log_names import ignore_reason
from ridtrace.forensics.reading.plain_copy import Progress, stage
from ridtrace.forensics.reading.scan import Window
from ridtrace.forensics.reading.staging import staging_dir
from ridtrace.forensics.reading.stats import FileNote, ReadStats, truncated_while_read
from ridtrace.forensics.reading.table import LogTable
from ridtrace.forensics.reading.unwrap import unwrapped_head, wrapper_of

T = TypeVar("T")
R = TypeVar("R")


def _map_in_thread(path: Path, on_bytes: Progress | None) -> Callable[[], LineMap]:
    """Number the lines of `path` on a thread; the returned call waits for the map."""
    result: list[LineMap] = []
    failure: list[BaseException] = []

    def work() -> None:
        try:
            with open(path, "rb") as fh:
                result.append(map_file(fh, on_bytes))
        except BaseException as exc:  # re-raised in the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=work, name="ridtrace-line-map", daemon=True)
    thread.start()

    def wait() -> LineMap:
        thread.join()
        if failure:
            raise failure[0]
        return result[0]

    return wait


def read_source(
    con: duckdb.DuckDBPyConnection,
    src: Source,
    use: Callable[[LogTable], T],
    *,
    stats: ReadStats,
    lean: bool,
    window: Window | None = None,
    on_bytes: Progress | None = None,
    prepared: PreparedReads | None = None,
) -> T | None:
    """`use` applied to the source parsed by DuckDB; None when it is ignored or unreadable.

    `prepared`: the reading thread's prepared queries (`read_all`), else each query is
    parsed anew.
    """
    if src.unreadable is not None:
        stats.unreadable_files.append(FileNote(src.name, src.unreadable))
        return None
    if src.from_directory and not src.regular and src.path is not None:
        why, loses_a_log = not_regular_reason(src.path)
        notes = stats.unreadable_files if loses_a_log else stats.ignored_files
        notes.append(FileNote(src.name, why))
        return None
    try:
        raw = open_raw(src)
    except OSError as exc:
        stats.unreadable_files.append(FileNote(src.name, f"cannot open: {exc}"))
        return None
    try:
        decoded = DecodedStream(raw)
        if decoded.unsupported is not None:
            stats.unreadable_files.append(FileNote(src.name, decoded.unsupported))
            return None
        head = decoded.read(SNIFF_BYTES)
        unwrap = wrapper_of(head)
        if src.from_directory:
            seen = head if unwrap is None else unwrapped_head(head)
            reason = ignore_reason(src.name, seen, whole=len(head) < SNIFF_BYTES)
            if reason is not None:
                stats.ignored_files.append(FileNote(src.name, reason))
                return None
        stats.files += 1
        # A pipe is read once, as a stream: DuckDB and the line map cannot both open it.
        in_place = (src.path is not None and src.regular and decoded.compression is None
                    and decoded.encoding is None and unwrap is None
                    and _sql_path(src.path) and not _had_bom(src.path))
        # A staged copy loses the lines past the cut as surely as an in-place read.
        size = os.fstat(raw.fileno()).st_size if src.path is not None and src.regular else None
        if in_place and src.path is not None:
            wait = _map_in_thread(src.path, on_bytes)
            result = use(parse(con, src.path, wait, src.name, stats, lean, window,
                               run=_runner(prepared, src.path)))
        else:
            with staging_dir("ridtrace-") as tmp:
                staged = tmp / "decoded.jsonl"
                with open(staged, "wb") as out:
                    line_map = stage(head, decoded, out, src.name, stats, on_bytes, unwrap)
                result = use(parse(con, staged, line_map, src.name, stats, lean, window,
                                   run=_runner(prepared, staged)))
        now = os.fstat(raw.fileno()).st_size if size is not None else None
        if size is not None and now is not None and now < size:
            # Lines that were there when the read began are not in the report, and
            # the line numbers DuckDB and the line map saw may differ.
            stats.unreadable_files.append(FileNote(src.name, truncated_while_read(size, now)))
        return result
    except OSError as exc:
        stats.unreadable_files.append(FileNote(src.name, f"read failed: {exc}"))
        return None
    except duckdb.OutOfMemoryException as exc:
        # DuckDB's per-span aggregate did not fit its memory limit: this file is lost to
        # the report (exit 3), the others are still read.
        limit = str(exc).partition("\n")[0]
        stats.unreadable_files.append(FileNote(
            src.name, f"out of memory while reading it ({limit}); --engine dask reads a "
            "big input in partitions",
        ))
        return None
    finally:
        if src.path is not None:
            raw.close()


def _runner(prepared: PreparedReads | None, path: Path) -> Callable[[str], pa.Table] | None:
    if prepared is None:
        return None
    return lambda sql: prepared.arrow(sql, str(path))


def _sql_path(path: Path) -> bool:
    """Whether DuckDB can be given this path: a name that is not UTF-8 (Latin-1 bytes
    from another system) is text DuckDB cannot take, and stopped the run (exit 4); such
    a file is read from a staged copy."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _had_bom(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(len(BOM)) == BOM


def parse(
    con: duckdb.DuckDBPyConnection, path: Path, line_map: LineMap | Callable[[], LineMap],
    name: str, stats: ReadStats, lean: bool, window: Window | None,
    run: Callable[[str], pa.Table] | None = None, *, starts_file: bool = True,
) -> LogTable:
    """A `LogTable` over the plain file at `path` (its queries run when asked, by `run`
    when given); ``starts_file`` False for a block that begins inside its file."""
    def fetch(numbers: Iterable[int]) -> dict[int, bytes]:
        with open(path, "rb") as fh:
            return fetch_lines(fh, resolved(), numbers)

    cache: list[LineMap] = []

    def resolved() -> LineMap:
        if not cache:
            cache.append(line_map() if callable(line_map) else line_map)
        return cache[0]

    return LogTable(
        con, str(path), resolved, fetch, name=name, stats=stats, lean=lean, window=window,
        run=run, starts_file=starts_file,
    )


@dataclass
class ReadAll(Generic[T]):
    """What `read_all` collected: one result per source read, the counters, the window."""

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
) -> ReadAll[T]:
    """`use(table, file_id)` for every source read; sources are read side by side.

    DuckDB numbers a file's rows in order, which keeps one file's scan on one thread;
    reading several files at once, each on its own cursor, uses the other cores. Counters
    merge in source order, so samples come out as a one-by-one read gives them.
    Ignored and unreadable sources give no result; they are in the counters.
    """
    width = max(1, min(len(sources), usable_cpus(), _PARALLEL_FILES))
    con = connect()
    # A file's numbered scan runs on the thread that asked for it; DuckDB's own workers
    # on top of `width` reading threads only crowd the cores, each with its own buffers
    # and hash tables: 5M lines in 3 files took ~25 % more page faults with them.
    con.execute(f"SET threads = {max(1, usable_cpus() // width)}")
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

    def one(file_id: int, src: Source) -> tuple[tuple[T, int] | None, ReadStats]:
        stats = ReadStats()
        cursor, prepared = reader()
        got = read_source(
            cursor, src, lambda table: (use(table, file_id), table.window_lines),
            stats=stats, lean=lean, window=window, on_bytes=on_bytes, prepared=prepared,
        )
        return got, stats

    total = ReadStats()
    results: list[T] = []
    in_window = 0
    pool = ThreadPoolExecutor(max_workers=width, thread_name_prefix="ridtrace-read")
    try:
        jobs = [pool.submit(one, file_id, src) for file_id, src in enumerate(sources)]
        for job in jobs:
            got, stats = _result(job)
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


# Files read at once: enough to fill this machine's cores, few enough to bound memory.
_PARALLEL_FILES = 4
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
