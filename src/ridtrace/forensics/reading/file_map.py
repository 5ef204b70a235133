"""The line map of a whole plain file on disk, read beside DuckDB's parse of it.

`lines.MapBuilder` numbers the blocks; this module reads the file into them through one
reused buffer, and passes over a line too long to hold.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from io import BufferedReader

from ridtrace.forensics.reading.lines import BLOCK_BYTES, WHITESPACE, LineMap, MapBuilder

# map_file's read size: a fresh 16 MiB buffer per file was ~4k page faults to touch, a
# megabyte is as fast to scan and its pages come back from the allocator warm.
_MAP_READ_BYTES = 1 << 20


def map_file(
    stream: BufferedReader, on_bytes: Callable[[int], None] | None = None,
    size: int = _MAP_READ_BYTES, longest: int = BLOCK_BYTES,
) -> LineMap:
    """The map of a whole plain file, read into one reused buffer of `size` bytes.

    Numbering runs beside DuckDB's parse over every byte of the file: joining each
    block to the partial line before it (`plain_copy.newline_chunks`) copied every byte once
    more and cost more than counting the newlines. Here only the partial line moves.
    A line longer than the buffer grows it, up to `longest` (the longest line the
    reader takes, `overlong.MAX_LINE_BYTES`); a longer one is passed over, not held.
    """
    builder = MapBuilder()
    buf = bytearray(_read_size(stream, size))
    held = 0  # bytes of a partial line at the front of `buf`
    while True:
        if held == len(buf) < longest:  # a line longer than a read: room for more of it
            buf.extend(bytes(min(len(buf), longest - len(buf))))
        if held == len(buf):
            # A line as long as the buffer: mapped without being held (it was, whole,
            # so a zero-filled or newline-free file of some GiB took as much memory).
            end = _pass_long_line(stream, buf, builder, on_bytes)
            if end < 0:
                return builder.finish()
            held = 0
        else:
            with memoryview(buf) as view:
                got = stream.readinto(view[held:])
            if on_bytes is not None and got:
                on_bytes(got)
            end = held + got
            if not got:
                builder.add(buf, held)
                return builder.finish()
        cut = buf.rfind(b"\n", held, end) + 1
        if cut:
            builder.add(buf, cut)
            buf[: end - cut] = buf[cut:end]
            held = end - cut
        else:
            held = end


# The least read buffer: a file that grows while it is mapped is read on in this size.
_MIN_READ_BYTES = 64 << 10


def _read_size(stream: BufferedReader, size: int) -> int:
    """`size`, or less for a smaller file: a zero-filled megabyte per file was most of
    the line map's cost on a directory of small pod logs (its pages faulted in)."""
    try:
        info = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):  # no descriptor: a stream in memory
        return size
    if not stat.S_ISREG(info.st_mode):  # a pipe's size says nothing of what will come
        return size
    return min(size, max(info.st_size + 1, _MIN_READ_BYTES))


def _pass_long_line(
    stream: BufferedReader, buf: bytearray, builder: MapBuilder,
    on_bytes: Callable[[int], None] | None,
) -> int:
    """Map the line that fills `buf` as one block, reading on to its newline through
    `buf`; the bytes read after that newline are moved to the front of `buf` and their
    count returned (-1: the file ended first). Only its length and whether it is blank
    are kept: the reader takes no line this long (`overlong`)."""
    size, blank = len(buf), not buf.strip(WHITESPACE)
    with memoryview(buf) as view:
        while True:
            got = stream.readinto(view)
            if on_bytes is not None and got:
                on_bytes(got)
            end = buf.find(b"\n", 0, got) if got else -1
            blank = blank and not buf[: got if end < 0 else end].strip(WHITESPACE)
            if not got:
                builder.add_line(size, blank=blank, last=b"x")
                return -1
            if end >= 0:
                builder.add_line(size + end + 1, blank=blank, last=b"\n")
                buf[: got - end - 1] = buf[end + 1 : got]
                return got - end - 1
            size += got
