"""Lines too long for DuckDB's JSON reader: found from the line map, left out of a copy.

DuckDB reads a line of up to ``maximum_object_size`` bytes (`MAX_LINE_BYTES`) whatever
its place in the file. A longer one it reads or fails the whole query on ("maximum_object_size
… exceeded"), depending on where the line falls in its buffers: a 20 MiB line was read
at one offset and failed at another, so the same file split into other blocks
(``--engine dask``) or other chunks (``--follow``) would give another report. A line
longer than the limit is therefore always a bad line.

Finding them costs nothing on a file without one: the line map cuts a block at least
every MiB that holds a newline, so only a block longer than the limit can hold such a
line, and only such a block is read again. A file with one is read by DuckDB from a
temporary copy in which that line is empty (its newline kept, so line numbers do not
move and the empty line yields no row): the rare file pays for the copy, not every read.

Such a line is one bad line, far under the 1 % a read tolerates; yet when it is a log
record (an Unlinked error whose field holds a huge payload) an incident is left out. A
line whose first KiB reads as a record's start lists its file as read in part, so the
run is never a silent "No findings".
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

import duckdb
import numpy as np

from ridtrace.forensics.reading.crash_holes import (
    CRASH_HOLE,
    CRASH_HOLE_BYTES,
    HOLE_KEPT_BYTES,
    crash_hole,
)
from ridtrace.forensics.reading.lines import (
    BLOCK_BYTES,
    MAX_LINE_BYTES,
    Block,
    LineMap,
    runs_of,
)
from ridtrace.forensics.reading.staging import make_dir
from ridtrace.forensics.reading.stats import FileNote, ReadStats

LONG_LINE_REASON = f"line longer than {MAX_LINE_BYTES >> 20} MiB"
HOLED_LONG_LINE_REASON = (
    f"{LONG_LINE_REASON}, NUL bytes inside it (lines lost in a crash?)")
# How much of an over-long line is looked at for a crash's hole: the part of a line
# before the hole that joined it to the next.
HOLE_HEAD_BYTES = 64 << 10
# Why a file with an over-long record is read in part. No line number: a Dask block
# numbers its lines from 1 (its bad lines say where, in the file's numbering).
LONG_RECORD = (
    f"a log record longer than {MAX_LINE_BYTES >> 20} MiB is not read (see its bad lines), "
    "so an incident it shows may be missing: look at its start "
    "(sed -n '<line>p' <file> | head -c 4096, the line and file its bad line names) and "
    "have the service log less in one line"
)
# How much of an over-long line tells a record from a blob: both formats write ``time``
# first and the format's own keys (``level``, ``target``, ``schema``) right after it.
RECORD_HEAD_BYTES = 1024
# A key of an object: after ``{`` or ``,``, quoted plainly or escaped in a string that
# carries the record (Grafana's rows, a shipper's ``line``: ``{\"time\":``). Such a
# line too is a record's that was not read: one bad line under the 1 % left its
# incident out of a clean "No findings".
_TIME_KEY = re.compile(rb'[{,]\s*\\?"(?:time|timestamp)\\?"\s*:')
_RECORD_KEY = re.compile(
    rb'[{,]\s*\\?"(?:schema|target|level|message|event|span_id|trace_id|request_id|fields)'
    rb'\\?"\s*:')

_NEWLINE = 10


@dataclass(frozen=True)
class LongLine:
    """Line `line` of a file: bytes ``[start, end)``, ``end`` its newline (or the file's end).

    ``body``: where what follows its leading NUL bytes starts, when that fits the limit
    (the hole copy-and-truncate leaves under a writer that does not append, or a
    crash's, then a line): not a line too long, but a line after a hole, judged as one
    (`judge.judge_records`); -1 otherwise.
    """

    line: int
    start: int
    end: int
    body: int = -1

    @property
    def nul_led(self) -> bool:
        """Whether its length is a hole's before a line of readable length (``body``)."""
        return self.body >= 0


def is_object_size_error(exc: duckdb.Error) -> bool:
    """True for DuckDB's "maximum_object_size … exceeded" (a line too long to read)."""
    return isinstance(exc, duckdb.InvalidInputException) and "maximum_object_size" in str(exc)


def long_lines(
    path: str | Path, line_map: LineMap, limit: int = MAX_LINE_BYTES
) -> list[LongLine]:
    """The lines of `path` longer than `limit` bytes (newline not counted), in file order.

    Only blocks longer than `limit` are read; on a file without such a line, none is.
    """
    blocks = [b for b in line_map.blocks if b.size > limit]
    if not blocks:
        return []
    found: list[LongLine] = []
    with open(path, "rb") as fh:
        for block in blocks:
            found.extend(_long_in_block(fh, block, limit))
    return found


def _long_in_block(fh: BinaryIO, block: Block, limit: int) -> list[LongLine]:
    """Lines of `block` longer than `limit`, read in pieces of at most `BLOCK_BYTES`."""
    stop = block.offset + block.size
    start, line, pos = block.offset, block.first_line, block.offset
    found: list[LongLine] = []
    fh.seek(pos)
    while pos < stop:
        data = fh.read(min(BLOCK_BYTES, stop - pos))
        if not data:
            break
        ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == _NEWLINE) + pos
        if len(ends):
            starts = np.concatenate(([start], ends[:-1] + 1))
            for i in np.flatnonzero(ends - starts > limit).tolist():
                found.append(LongLine(line + i, int(starts[i]), int(ends[i])))
            line += len(ends)
            start = int(ends[-1]) + 1
        pos += len(data)
    if stop - start > limit:  # the file's last line, with no newline after it
        found.append(LongLine(line, start, stop))
    return [_nul_led(fh, x, limit) for x in found]


def _nul_led(fh: BinaryIO, line: LongLine, limit: int) -> LongLine:
    """`line`, with its ``body`` (`nul_led`) when what follows its leading NUL bytes fits `limit`:
    a hole of 20 MiB before a record made one 20 MiB "line", a bad line whatever the
    record said, and an Unlinked error after a big log's copy-and-truncate was lost
    ("No findings.", exit 0) where one after a small log's was read."""
    pos = line.start
    fh.seek(pos)
    while pos < line.end:
        data = fh.read(min(BLOCK_BYTES, line.end - pos))
        if not data:
            break
        body = len(data.lstrip(b"\x00"))
        pos += len(data) - body
        if body:
            break
    return replace(line, body=pos) if line.end - pos <= limit else line


def copy_without(path: str | Path, out: BinaryIO, lines: Sequence[LongLine]) -> None:
    """Copy `path` to `out` with each of `lines` (in file order) emptied, newline kept;
    a `nul_led` one keeps what follows its NUL bytes, after one NUL: DuckDB leaves it
    to the Python judge, which reads the line whole from `path` as any line with a hole."""
    with open(path, "rb") as src:
        pos = 0
        for long in lines:
            _copy_range(src, out, pos, long.start)
            if long.nul_led:
                out.write(b"\x00")
                _copy_range(src, out, long.body, long.end)
            pos = long.end
        src.seek(pos)
        shutil.copyfileobj(src, out, BLOCK_BYTES)


def _copy_range(src: BinaryIO, out: BinaryIO, start: int, stop: int) -> None:
    src.seek(start)
    left = stop - start
    while left > 0:
        data = src.read(min(BLOCK_BYTES, left))
        if not data:
            return
        out.write(data)
        left -= len(data)


CHANGED_WHILE_READ = ("changed while being read (a line over 16 MiB that was not there "
                      "when it was opened: rewritten in place, or a record that long "
                      "appended meanwhile): read it again")


class ChangedWhileRead(Exception):
    """DuckDB met a line over its limit that the file's line map does not hold."""


def set_aside(
    path: str | Path, line_map: LineMap, lines: Sequence[LongLine], *, name: str,
    stats: ReadStats,
) -> tuple[Path, LineMap, list[tuple[int, str]], dict[int, LongLine]]:
    """A copy of `path` without `lines` to read instead, the map numbering its rows,
    those lines as bad ones (line, reason), and the lines after a hole (`nul_led`) by
    number, judged by `after_hole`; the file is noted in `stats` as read in part when
    one of them starts like a log record (`starts_like_record`)."""
    copy = make_dir("ridtrace-long-lines-") / "copy.jsonl"
    with open(copy, "wb") as out:
        copy_without(path, out, lines)
    # A line after a hole is read from the copy and judged as lines after small holes
    # are: it is no line too long.
    holes = {x.line: x for x in lines if x.nul_led}
    lines = [x for x in lines if not x.nul_led]
    # A crash's hole of megabytes makes one long line of the lines around it: lost
    # lines, not a record too long to read (whose advice is to log less in one line).
    # Only where a record began before it: a preallocated stretch, never written, is no
    # record cut short.
    holed = {x.line for x in lines if _record_then_hole(_head(path, x, HOLE_HEAD_BYTES),
                                                          first_line=x.line == 1)}
    notes = [FileNote(name, CRASH_HOLE)] if holed else []
    if any(x.line not in holed and starts_like_record(_head(path, x)) for x in lines):
        notes.append(FileNote(name, LONG_RECORD))
    stats.unreadable_files.extend(n for n in notes if n not in stats.unreadable_files)
    # The map counted the lines already (they are lines read); now they are blank rows.
    return copy, without_long_lines(line_map, lines), [
        (x.line, HOLED_LONG_LINE_REASON if x.line in holed else LONG_LINE_REASON) for x in lines
    ], holes


def after_hole(fh: BinaryIO, line: LongLine) -> bytes:
    """The text a line after a hole (`LongLine.nul_led`) is judged by: its run of NULs
    kept to `HOLE_KEPT_BYTES`, then what follows it, as a staged copy keeps such a line
    (`plain_copy.newline_chunks`). Read whole, a preallocated log of gigabytes of NULs
    took as much memory."""
    fh.seek(line.body)
    return b"\x00" * min(line.body - line.start, HOLE_KEPT_BYTES) + fh.read(line.end - line.body)


def _head(path: str | Path, line: LongLine, size: int = RECORD_HEAD_BYTES) -> bytes:
    with open(path, "rb") as fh:
        fh.seek(line.start)
        return fh.read(size)


def _record_then_hole(head: bytes, *, first_line: bool) -> bool:
    """Whether a long line's head is a record's start, then a crash's hole; or, past the
    file's first line, a crash's hole, then more than a line may hold (lines lost with
    the hole: taken for a record too long alone, the file was no crash's, and one bad
    line under the 1 % was a clean read). On the first line such a hole is
    copy-and-truncate's (`copy_truncated`)."""
    if not first_line and head.lstrip(b" \t\r").startswith(b"\0" * CRASH_HOLE_BYTES):
        return True
    opens = head.lstrip(b"\0 \t\r").removeprefix(b"\xef\xbb\xbf").startswith(b"{")
    return opens and crash_hole(head, first_line=first_line, whole=False)


def starts_like_record(head: bytes) -> bool:
    """Whether a line's first bytes are those of a log record of either format: a JSON
    object with a time key and another key records have. Cheap, and read on a line's
    start only: a record's own fields may come after the huge one (ridtrace's
    ``schema`` follows its ``message``), so no format's marker is required."""
    body = head.lstrip(b"\0 \t\r").removeprefix(b"\xef\xbb\xbf").lstrip(b" \t")
    if body.startswith(b"["):  # a one-line array of records (Fluent Bit's http batch)
        body = body[1:].lstrip(b" \t\r\n")
    return (body.startswith(b"{") and _TIME_KEY.search(body) is not None
            and _RECORD_KEY.search(body) is not None)


def without_long_lines(line_map: LineMap, lines: Sequence[LongLine]) -> LineMap:
    """`line_map` numbering the copy's rows: the emptied lines are blank there.

    Its blocks still describe the original file, where a bad line's text is read.
    """
    blank = np.union1d(line_map.blank_lines, np.array([x.line for x in lines], dtype=np.int64))
    return replace(line_map, blank=[runs_of(blank.astype(np.int64))])


def held_piece(data: bytes | bytearray, cut: int) -> bytes:
    """The piece of a line after `cut` to hold for its newline, kept to one byte past
    the longest line the read takes (`MAX_LINE_BYTES`): such a line is a bad line
    whatever follows, and a writer that never ends its line was held whole, and copied
    again at every poll."""
    return bytes(data[cut : cut + MAX_LINE_BYTES + 1])
