"""A source copied to a plain file DuckDB can read, its lines numbered on the way.

Anything but a plain file on disk (gzip, a UTF-8 BOM, UTF-16, a container runtime's
wrapping, standard input, a byte range of a bigger file) is decoded to a temporary copy
first, so every source takes the same parse (`ridtrace.forensics.reading.files`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

from ridtrace.forensics.reading.lines import (
    BLOCK_BYTES,
    MAX_LINE_BYTES,
    LineMap,
    Readable,
    map_blocks,
)
from ridtrace.forensics.reading.stats import FileNote, ReadStats
from ridtrace.forensics.reading.unwrap import Unwrapper, cut_short
from ridtrace.forensics.reading.unwrap_parts import CUT_SHORT_FILE

__all__ = ["Progress", "newline_chunks", "stage"]

Progress = Callable[[int], None]


class Writable(Protocol):
    """Where a staged copy goes: a file, or one that stops at a limit."""

    def write(self, data: bytes, /) -> object: ...


def stage(
    head: bytes, stream: Readable, out: Writable, name: str, stats: ReadStats,
    on_bytes: Progress | None = None, unwrap: Unwrapper | None = None,
) -> LineMap:
    """Copy `head` and the rest of `stream` to `out`, numbering the lines on the way.

    When `stream` is a `DecodedStream` whose compressed data tore, the torn last line is one bad
    line and the file is recorded as read only up to the tear. `unwrap` takes each line
    out of the container runtime's or journal's wrapping (`reading.unwrap`), line for line.
    """

    if unwrap is not None:
        # A hole of NULs at the top (copytruncate under a writer that does not append) is
        # no part of the first line: the plain read passes over it, and an unwrapper given
        # it took the first record for a bad line (an OpenTelemetry batch: the file).
        head = head.lstrip(b"\x00")
    # Progress in the source's own bytes where it says how many it read: the bar's total
    # is the files' sizes, and a gzip's decompressed bytes ran it past 100 %.
    consumed = getattr(stream, "consumed", lambda: None)
    counted = [0]

    def progress(chunk: bytes) -> None:
        if on_bytes is None:
            return
        read = consumed()
        step = len(chunk) if read is None else read - counted[0]
        counted[0] = counted[0] + step
        if step > 0:
            on_bytes(step)

    def chunks() -> Iterator[bytes]:
        # A line over the limit is a bad line whatever it holds: the copy keeps enough
        # of it to be one (`overlong`), not all of it.
        for chunk in newline_chunks(_Prefixed(head, stream), max_line=MAX_LINE_BYTES):
            progress(chunk)
            if getattr(stream, "tear", None) is not None and not chunk.endswith(b"\n"):
                cut = chunk.rfind(b"\n") + 1
                chunk, torn[0] = chunk[:cut], chunk[cut:]
            if unwrap is not None:
                chunk = unwrap.feed(chunk)
            out.write(chunk)
            yield chunk

    torn = [b""]
    line_map = map_blocks(chunks())
    tear = getattr(stream, "tear", None)
    if tear is not None:
        where = f"after line {line_map.lines}"
        stats.unreadable_files.append(FileNote(name, f"{tear} {where}; read up to the tear"))
        if torn[0].strip():
            # A line of the file, though not in the map DuckDB reads: counted as both.
            stats.count_lines(name, 1)
            stats.bad(name, line_map.lines + 1, f"torn last line ({tear})")
    if unwrap is not None:
        unfinished = unwrap.unfinished()
        for line in unfinished:
            # Its parts are empty lines in the map, so the record is counted here.
            stats.count_lines(name, 1)
            stats.bad(name, line, cut_short(unwrap))
        if unfinished:  # a record is gone, however few the bad lines
            stats.unreadable_files.append(FileNote(name, CUT_SHORT_FILE))
    return line_map


class _Prefixed:
    """`head` then the rest of `stream`, as one readable stream."""

    def __init__(self, head: bytes, stream: Readable) -> None:
        self._head, self._stream = head, stream

    def read(self, size: int = -1) -> bytes:
        if self._head:
            data, self._head = self._head, b""
            return data
        return self._stream.read(size)


def newline_chunks(
    stream: Readable, size: int = BLOCK_BYTES, *, max_line: int | None = None
) -> Iterable[bytes]:
    """Newline-aligned chunks of about `size` bytes (a longer line is one chunk).

    `max_line`: a line longer than that is kept as `_HeldLine` keeps it, still too long
    for the reader: the rest of it was held in memory whole, so a gzip bomb or
    ``/dev/zero`` (bytes without a newline) took all the machine's memory.
    """
    if max_line is not None:
        yield from _capped_chunks(stream, size, max_line)
        return
    carry = b""
    while True:
        data = stream.read(size)
        if not data:
            if carry:
                yield carry
            return
        cut = data.rfind(b"\n")
        if cut < 0:
            carry += data
            continue
        # One copy: the carried partial line joined to a view of the new whole lines.
        yield b"".join((carry, memoryview(data)[: cut + 1]))
        carry = data[cut + 1 :]


def _capped_chunks(stream: Readable, size: int, max_line: int) -> Iterable[bytes]:
    """`newline_chunks` with each line kept as `_HeldLine` keeps it."""
    held = _HeldLine(max_line + 1)
    while True:
        data = stream.read(size)
        if not data:
            rest = held.take()
            if rest:
                yield rest
            return
        cut = data.rfind(b"\n")
        if cut < 0:
            held.add(data)
            continue
        first = data.find(b"\n")
        held.add(data[:first])
        yield b"".join((held.take(), memoryview(data)[first : cut + 1]))
        held.add(data[cut + 1 :])


class _HeldLine:
    """A line read across chunks, kept to what the read judges of it: a run of NUL bytes
    leading it (a crash's hole, copy-and-truncate's) to `limit` bytes, then what follows
    the run to `limit` bytes more. A line within the limit is kept whole.

    So a staged copy (a gzip's, a Dask block's) holds the line the local engine judges
    from a plain file (`overlong.after_hole`): a record after a hole of 100 MiB was cut
    off with the hole's end and lost, where a plain file's was read.
    """

    __slots__ = ("_in_run", "_limit", "_parts", "_run", "_tail")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._parts: list[bytes] = []
        self._run = self._tail = 0
        self._in_run = True

    def add(self, data: bytes) -> None:
        if self._in_run:
            body = data.lstrip(b"\x00")
            nuls = min(len(data) - len(body), self._limit - self._run)
            if nuls:
                self._parts.append(data[:nuls])
                self._run += nuls
            if not body:
                return
            self._in_run = False
            data = body
        room = self._limit - self._tail
        if room > 0 and data:
            piece = data[:room]
            self._parts.append(piece)
            self._tail += len(piece)

    def take(self) -> bytes:
        """The line held so far, and a fresh start for the next one."""
        line = b"".join(self._parts)
        self._parts = []
        self._run = self._tail = 0
        self._in_run = True
        return line
