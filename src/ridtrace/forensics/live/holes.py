"""The NULs a copy-and-truncate leaves where lines should start, and the way past them."""

from __future__ import annotations

import contextlib
import os


def past_hole(fd: int, pos: int, size: int) -> int:
    """The first byte at or after `pos` that is not NUL (`size` if none).

    NULs where a line should start are the hole a copy-and-truncate leaves when its
    writer does not append (``>`` rather than ``>>``, a handle opened for writing): its
    next write lands at its old offset, and the bytes before it read as NULs.
    """
    if os.pread(fd, 1, pos) != b"\0":
        return pos
    with contextlib.suppress(OSError):  # no SEEK_DATA here, or nothing but hole
        pos = max(pos, os.lseek(fd, pos, os.SEEK_DATA))  # past a sparse hole unread
    while pos < size:
        block = os.pread(fd, min(1 << 20, size - pos), pos)
        rest = block.lstrip(b"\0")
        pos += len(block) - len(rest)
        if rest or not block:
            break
    return min(pos, size)
