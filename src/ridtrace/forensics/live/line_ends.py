"""Where whole lines end in a followed file, read by descriptor without moving it."""

from __future__ import annotations

import os

_COUNT_BYTES = 16 << 20


def lines_before_last_newline(fd: int, size: int) -> tuple[int, int]:
    """(newlines in the first `size` bytes, the offset just after the last of them):
    where a follow from the end starts, and how many lines it starts after."""
    lines, pos, last_newline = 0, 0, 0
    while pos < size:
        block = os.pread(fd, min(_COUNT_BYTES, size - pos), pos)
        if not block:
            break
        lines += block.count(b"\n")
        cut = block.rfind(b"\n")
        if cut >= 0:
            last_newline = pos + cut + 1
        pos += len(block)
    return lines, last_newline


def to_line_end(fd: int, offset: int, size: int) -> int:
    """`offset` moved to just after the newline of the line it falls in (or to `size`
    when that line has no newline yet); unchanged when a line ends right before it."""
    while 0 < offset < size and os.pread(fd, 1, offset - 1) != b"\n":
        block = os.pread(fd, min(1 << 20, size - offset), offset)
        if not block:
            break
        cut = block.find(b"\n")
        offset += len(block) if cut < 0 else cut + 1
    return offset
