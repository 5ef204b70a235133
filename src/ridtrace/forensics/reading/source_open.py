"""A log source opened for reading: what it is, whether it is read at all, and how.

Shared by the one-file read (`reading.files.read_source`) and the batched read of small
files (`reading.small_files`), so both skip, sniff and note a source the same way.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import duckdb

from ridtrace.forensics.reading.archives import TAR_ARCHIVE, ZIP_ARCHIVE, is_tar, is_zip_of_logs
from ridtrace.forensics.reading.decoding import DecodedStream
from ridtrace.forensics.reading.inputs import SNIFF_BYTES, Source, not_regular_reason, open_raw
from ridtrace.forensics.reading.read_on import walked_file_verdict
from ridtrace.forensics.reading.stats import FileNote, ReadStats, truncated_while_read
from ridtrace.forensics.reading.unwrap import Unwrapper, wrapper_of


@dataclass
class OpenedSource:
    """A source that is read: its stream, first bytes, and whether DuckDB parses it in
    place (a plain file on disk) or from a decoded copy."""

    raw: BinaryIO
    decoded: DecodedStream
    head: bytes
    unwrap: Unwrapper | None
    in_place: bool
    # The size when it was listed or when the read began, the larger (a regular file), to
    # notice a copy truncated under it.
    size: int | None


def listed_readable(src: Source, stats: ReadStats) -> bool:
    """False (and the reason noted) for a source known unreadable before it is opened."""
    if src.unreadable is not None:
        stats.unreadable_files.append(FileNote(src.name, src.unreadable))
        return False
    if src.from_directory and not src.regular and src.path is not None:
        why, loses_a_log = not_regular_reason(src.path)
        notes = stats.unreadable_files if loses_a_log else stats.ignored_files
        notes.append(FileNote(src.name, why))
        return False
    return True


def open_source(src: Source, stats: ReadStats) -> OpenedSource | None:
    """The source opened and sniffed; None (the reason noted) when it is not read.

    The caller closes ``raw`` of a file on disk (standard input stays open).
    """
    if not listed_readable(src, stats):
        return None
    try:
        raw = open_raw(src)
    except FileNotFoundError:
        stats.unreadable_files.append(FileNote(src.name, DELETED))
        return None
    except OSError as exc:
        stats.unreadable_files.append(FileNote(src.name, f"cannot open: {exc}"))
        return None
    if _replaced(src, raw):
        # logrotate's `create` renamed it since it was listed: the name leads to the next
        # part (or a new file), and the file listed is read under no name.
        stats.unreadable_files.append(FileNote(src.name, REPLACED))
        raw.close()
        return None
    try:
        opened = sniff(src, raw, stats)
    except OSError as exc:
        note_failure(src, exc, stats)
        opened = None
    if opened is None and src.path is not None:
        raw.close()
    return opened


def sniff(src: Source, raw: BinaryIO, stats: ReadStats) -> OpenedSource | None:
    """How `raw` is read; None (the reason noted) when it is not read at all."""
    decoded = DecodedStream(raw)
    if decoded.unsupported is not None:
        stats.unreadable_files.append(FileNote(src.name, decoded.unsupported))
        return None
    head = decoded.read(SNIFF_BYTES)
    if is_zip_of_logs(head):
        stats.unreadable_files.append(FileNote(src.name, ZIP_ARCHIVE))
        return None
    unwrap = wrapper_of(head)
    if src.from_directory:
        ignored, head, unwrap = walked_file_verdict(src.name, head, unwrap, decoded.read)
        if ignored is not None:
            stats.ignored_files.append(ignored)
            return None
    if is_tar(head):
        stats.unreadable_files.append(FileNote(src.name, TAR_ARCHIVE))
        return None
    stats.files += 1
    # A staged copy loses the lines past the cut as surely as an in-place read.
    size = os.fstat(raw.fileno()).st_size if src.path is not None and src.regular else None
    if size is not None and src.size > size:
        # Shrunk since it was listed (copytruncate between a walk's listing and this
        # open, minutes apart in a walk of thousands of files): compared with the size
        # at the open only, the lines lost were lost without a word, exit 0.
        size = src.size
    # A pipe is read once, as a stream: DuckDB and the line map cannot both open it. So
    # is a file that holds more than its size says (/proc and /sys say 0 or a page):
    # DuckDB read it as that size, and its lines were counted but never parsed, so a
    # named file of any content added no bad line and no request to a report that said
    # it was read whole.
    in_place = (size is not None and size >= len(head) and src.path is not None
                and decoded.compression is None and decoded.encoding is None
                and unwrap is None and _sql_path(src.path) and not decoded.had_bom)
    return OpenedSource(raw, decoded, head, unwrap, in_place, size)


def note_truncation(src: Source, opened: OpenedSource, stats: ReadStats) -> None:
    """Note a file that shrank while it was read (copytruncate under the reader), or
    whose name was given to another file meanwhile (a rename rotation)."""
    # Shrunk: lines that were there when the read began are not in the report, and the
    # line numbers DuckDB and the line map saw may differ.
    if note_shrunk(src, opened, stats):
        return
    if opened.size is not None and _rewritten(opened):
        # Truncated and written again past its old size before the check (a writer that
        # does not append goes on at its old offset, after a hole): the size said
        # nothing, and the lines lost were lost with exit 0.
        stats.unreadable_files.append(FileNote(src.name, truncated_while_read(opened.size)))
    elif src.path is not None and _now_another(src.path, opened.raw):
        # DuckDB and the line map open the file by its name: they may have read the other.
        stats.unreadable_files.append(FileNote(src.name, REPLACED))


# The bytes of a plain file's start compared after the read: a rewritten file's differ.
_START_CHECKED = 4096


def _rewritten(opened: OpenedSource) -> bool:
    """Whether a plain file's first bytes are no longer those read when it was opened."""
    decoded = opened.decoded
    if decoded.compression is not None or decoded.encoding is not None or decoded.had_bom:
        return False  # its head is decoded text, not the file's bytes
    first = opened.head[:_START_CHECKED]
    try:
        return bool(first) and os.pread(opened.raw.fileno(), len(first), 0) != first
    except OSError:
        return False


REPLACED = ("replaced by another file since it was listed (rotated while the logs were "
            "read?): read the logs again")
DELETED = ("No such file or directory: deleted since it was listed (a rotation removed it "
           "while the logs were read?): read the logs again")


def note_gone(src: Source, opened: OpenedSource, stats: ReadStats) -> bool:
    """Note a file whose name leads nowhere now, or to another file, and say so: DuckDB
    opens a file read in place by its name, and a name deleted since the file was opened
    was its IO Error, a traceback (exit 4) instead of an incomplete read."""
    if src.path is None:
        return False
    if not os.path.lexists(src.path):
        stats.unreadable_files.append(FileNote(src.name, DELETED))
        return True
    if _now_another(src.path, opened.raw):
        stats.unreadable_files.append(FileNote(src.name, REPLACED))
        return True
    return False


def _replaced(src: Source, raw: BinaryIO) -> bool:
    if src.inode is None or src.path is None:
        return False
    info = os.fstat(raw.fileno())
    return (info.st_dev, info.st_ino) != src.inode


def _now_another(path: Path, raw: BinaryIO) -> bool:
    """Whether `path` now leads to another file than the one `raw` holds open."""
    try:
        now = os.stat(path)
    except OSError:  # renamed away and not (yet) created again: nothing else to read
        return False
    held = os.fstat(raw.fileno())
    return (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino)


def note_shrunk(src: Source, opened: OpenedSource, stats: ReadStats) -> bool:
    """Note a file that is shorter now than when its read began, and say so: DuckDB
    reads a file in place by its length then, and a copytruncate beside it was its IO
    Error ("could not read enough bytes"), not the truncation it was."""
    if opened.size is None:
        return False
    now = os.fstat(opened.raw.fileno()).st_size
    if now >= opened.size:
        return False
    stats.unreadable_files.append(FileNote(src.name, truncated_while_read(opened.size, now)))
    return True


def note_failure(src: Source, exc: OSError | duckdb.OutOfMemoryException | duckdb.IOException,
                 stats: ReadStats) -> None:
    """A source lost to the report by a failed read: noted, so the result is incomplete."""
    if isinstance(exc, OSError | duckdb.IOException):
        stats.unreadable_files.append(FileNote(src.name, f"read failed: {exc}"))
        return
    # DuckDB's per-span aggregate did not fit its memory limit: this file is lost to
    # the report (exit 3), the others are still read.
    limit = str(exc).partition("\n")[0]
    stats.unreadable_files.append(FileNote(
        src.name, f"out of memory while reading it ({limit}); --engine dask reads a "
        "big input in partitions",
    ))


def _sql_path(path: Path) -> bool:
    """Whether DuckDB can be given this path: a name that is not UTF-8 (Latin-1 bytes
    from another system) is text DuckDB cannot take, and stopped the run (exit 4); such
    a file is read from a staged copy."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
