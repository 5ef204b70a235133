"""A tar archive of logs: ``docker cp CONTAINER:/app/logs - > logs.tar``, a support
bundle's ``logs.tar.gz``.

Split at newlines such an archive was one file of every member's lines, each member's
first line glued to its binary header (a bad line, that record lost), the padding
between members "a run of NUL bytes where a crash lost lines", and its lines cited at
the archive's line numbers, the members' clocks taken for one. It is known by the POSIX
(or GNU) magic of its first header, and listed unreadable with the way to read it.
"""

from __future__ import annotations

from ridtrace.forensics.reading.log_names import named_like_log

__all__ = ["TAR_ARCHIVE", "ZIP_ARCHIVE", "is_tar", "is_zip_of_logs"]

TAR_ARCHIVE = (
    "a tar archive of files, not JSON lines: extract it (tar xf FILE) and analyze the "
    "files it holds"
)


def is_tar(head: bytes) -> bool:
    """Whether a file's first (decompressed) bytes are a tar archive's first header."""
    return head[257:262] == b"ustar"


ZIP_ARCHIVE = (
    "a zip archive of logs, not JSON lines: extract it (unzip FILE) and analyze the files "
    "it holds"
)


def is_zip_of_logs(head: bytes) -> bool:
    """Whether a file's first bytes are a zip archive's first entry, named like a log
    (``frontend.jsonl``): a download of logs (a CI job's artifacts, a console's "download
    logs") was ignored in a walk as "binary data", and a walk of it alone said clean."""
    if not head.startswith(b"PK\x03\x04") or len(head) < 30:
        return False
    name = head[30 : 30 + int.from_bytes(head[26:28], "little")]
    return named_like_log(name.decode("utf-8", "replace").rsplit("/", 1)[-1])
