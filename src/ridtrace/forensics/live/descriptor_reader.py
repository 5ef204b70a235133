"""An open file read from its first byte without moving its descriptor's offset.

A tail decodes a compressed file through its descriptor's offset (`FileTail._read_gzip`)
and must look at the file's head meanwhile (`FileTail._claim_head`). Opening the file
again by its name for that failed once a rotation had renamed or removed it, or read
another file that had the name since. Reading with ``os.pread`` at offsets of its own
looks at the very file the tail holds, and the tail's decoder reads on where it was.
"""

from __future__ import annotations

import io
import os
from typing import Any


class DescriptorReader(io.RawIOBase):
    """The bytes of the file open at `fd`, from its first, by positional reads.

    Closing it leaves `fd` open: the tail that holds the descriptor closes it.
    """

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd
        self._at = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        got = os.preadv(self._fd, [buffer], self._at)
        self._at += got
        return got

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if whence == os.SEEK_CUR:
            offset += self._at
        elif whence == os.SEEK_END:
            offset += os.fstat(self._fd).st_size
        self._at = offset
        return offset

    def tell(self) -> int:
        return self._at


def from_first_byte(fd: int) -> io.BufferedReader:
    """The file open at `fd` as a binary file from its first byte (`DescriptorReader`),
    buffered as `open` would give it (a decoder peeks at its first bytes)."""
    return io.BufferedReader(DescriptorReader(fd))
