"""Runs of NUL bytes in a log: a crash's hole (lines lost) or copy-and-truncate's (none).

A crash leaves the file's size written and the pages in the page cache not: whole
pages of NULs where lines were. logrotate's ``copytruncate`` under a writer that does
not append leaves NULs before the file's first line, standing for lines now in the
rotated copy.
"""

from __future__ import annotations

import codecs

from ridtrace.forensics.reading.lines import MAX_LINE_BYTES

# The shortest run of NULs at a line's start taken for a crash's hole (file systems
# allocate whole blocks, so real holes run to hundreds or thousands of bytes).
CRASH_HOLE_BYTES = 8
# Why a file with such a hole is read only in part (its bad lines say where).
CRASH_HOLE = "a run of NUL bytes where a crash lost lines (see its bad lines)"
_NUL_RUN = b"\x00" * CRASH_HOLE_BYTES
# How much of a line's leading run of NULs the read keeps: a line is judged by at most
# this many, then what follows them (a preallocated log of 10 GB of NULs cost 10 GB of
# memory, read whole). Both engines keep the same, so their reasons agree.
HOLE_KEPT_BYTES = MAX_LINE_BYTES + 1


def hole_shown(nuls: int) -> str:
    """A run of `nuls` NUL bytes as a reason says it: a run kept to `HOLE_KEPT_BYTES` was
    longer still."""
    return f"more than {MAX_LINE_BYTES}" if nuls > MAX_LINE_BYTES else str(nuls)


def copy_truncated(text: bytes, *, first_line: bool) -> bool:
    """Whether a line is the hole copy-and-truncate leaves, then a writer's next line.

    logrotate's ``copytruncate`` empties the file while a writer that does not append
    (``>`` rather than ``>>``) keeps its offset: its next line lands there, after NULs
    that stand for lines now in the rotated copy, not for lost ones. So only a file's
    first line is read so; a hole further on is a crash's (`judge_records`).
    """
    return first_line and text.startswith(b"\x00") and bool(text.strip(b"\x00\r\t "))


def inner_hole(text: bytes, *, whole: bool = True) -> int:
    """The NUL bytes of a crash's hole inside a line (0 when it holds none): a run of
    `CRASH_HOLE_BYTES` or more after the line's first byte that is not NUL, in a line
    that is UTF-8 but for its NULs.

    A crash zeroes whole pages of the file, and a page starts mid-line as often as not:
    the lines the hole stands for, newlines included, then join the line it starts in
    and the one it ends in. That one line was "binary data" (or "UTF-32 text"), a single
    bad line under the 1 % rule, and a duplicate in the lost lines left "No findings".
    Binary data is not UTF-8 besides.
    """
    body = text.lstrip(b"\x00")
    if _NUL_RUN not in body:
        return 0
    try:
        # `whole`: the line's end is here; a line's head may end inside a character.
        codecs.getincrementaldecoder("utf-8")().decode(body.replace(b"\x00", b""), final=whole)
    except UnicodeDecodeError:
        return 0
    return text.count(b"\x00")



def crash_hole(text: bytes, *, first_line: bool, whole: bool = True) -> bool:
    """Whether a line (`whole`), or its head, holds a crash's hole, at its start (but for
    copy-and-truncate's, `copy_truncated`) or inside it (`inner_hole`): lines are lost."""
    if copy_truncated(text, first_line=first_line):
        return inner_hole(text, whole=whole) > 0
    return text.startswith(_NUL_RUN) or inner_hole(text, whole=whole) > 0
