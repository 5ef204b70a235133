"""A source copied to a plain file DuckDB can read, its lines numbered on the way.

Anything but a plain file on disk (gzip, a UTF-8 BOM, UTF-16, a container runtime's
wrapping, standard input, a byte range of a bigger file) is decoded to a temporary copy
first, so every source takes the same parse (`ridtrace.forensics.reading.files`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import BinaryIO

from ridtrace.forensics.reading.lines import LineMap, Readable, map_blocks, newline_chunks
from ridtrace.forensics.reading.stats import FileNote, ReadStats
from ridtrace.forensics.reading.unwrap import Unwrapper, cut_short

__all__ = ["Progress", "stage"]

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

    def chunks() -> Iterator[bytes]:
        for chunk in newline_chunks(_Prefixed(head, stream)):
            if on_bytes is not None:
                on_bytes(len(chunk))
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
        for line in unwrap.unfinished():
            # Its parts are empty lines in the map, so the record is counted here.
            stats.count_lines(name, 1)
            stats.bad(name, line, cut_short(unwrap))
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
