"""A tar archive of logs: ``docker cp CONTAINER:/app/logs - > logs.tar``, a support
bundle's ``logs.tar.gz``.

Split at newlines such an archive was one file of every member's lines, each member's
first line glued to its binary header (a bad line, that record lost), the padding
between members "a run of NUL bytes where a crash lost lines", and its lines cited at
the archive's line numbers, the members' clocks taken for one. It is known by the POSIX
(or GNU) magic of its first header, and listed unreadable with the way to read it.
"""

from __future__ import annotations

__all__ = ["TAR_ARCHIVE", "is_tar"]

TAR_ARCHIVE = (
    "a tar archive of files, not JSON lines: extract it (tar xf FILE) and analyze the "
    "files it holds"
)


def is_tar(head: bytes) -> bool:
    """Whether a file's first (decompressed) bytes are a tar archive's first header."""
    return head[257:262] == b"ustar"
