"""A source copied to a plain file DuckDB can read, its lines numbered on the way.

Anything but a plain file on disk (gzip, a UTF-8 BOM, UTF-16, a container runtime's
wrapping, standard input, a byte range of a bigger file) is decoded to a temporary copy
first, so every source takes the same parse (`ridtrace.forensics.reading.files`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO

from ridtrace.forensics.reading.lines import BLOCK_BYTES, LineMap, Readable, map_blocks
from ridtrace.forensics.reading.overlong import MAX_LINE_BYTES
from ridtrace.forensics.reading.stats import FileNote, ReadStats
from ridtrace.forensics.reading.unwrap import Unwrapper, cut_short
from ridtrace.forensics.reading.unwrap_parts import CUT_SHORT_FILE

__all__ = ["Progress", "newline_chunks", "stage"]

Progress = Callable[[int], None]


def stage(
    head: bytes, stream: Readable, out: BinaryIO, name: str, stats: ReadStats,
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

    `max_line`: a line is kept to its first ``max_line + 1`` bytes (and its newline),
    still too long for the reader: the rest of it was held in memory whole, so a gzip
    bomb or ``/dev/zero`` (bytes without a newline) took all the machine's memory.
    """
    carry = b""
    while True:
        data = stream.read(size)
        if not data:
            if carry:
                yield carry
            return
        cut = data.rfind(b"\n")
        if cut < 0:
            if max_line is None or len(carry) <= max_line:
                carry += data if max_line is None else data[: max_line + 1 - len(carry)]
            continue
        if max_line is not None and len(carry) > max_line:
            # The rest of the long line is dropped up to its newline.
            data = data[data.find(b"\n"):]
            cut = data.rfind(b"\n")
        # One copy: the carried partial line joined to a view of the new whole lines.
        yield b"".join((carry, memoryview(data)[: cut + 1]))
        carry = data[cut + 1 :]
