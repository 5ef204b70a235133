"""Where each line of a plain (decoded) log file starts, found without parsing it.

The JSON reader yields one row per non-blank line, in file order. Counting newlines
per block is enough to number those rows while a file has no blank line; the same
numpy pass tells whether a block may hold one, and only then is it scanned exactly. The same
blocks serve to fetch the text of the few lines a row cannot explain (bad lines).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import BinaryIO, Protocol

import numpy as np

BLOCK_BYTES = 16 << 20
# The longest line the read takes (DuckDB's ``maximum_object_size``, `overlong`).
MAX_LINE_BYTES = 16 << 20


class Readable(Protocol):
    """Anything with ``read(size)``: files, decoders, chained streams."""

    def read(self, size: int = -1, /) -> bytes: ...

_NEWLINE = 10
# A line that is empty or starts with white space may be blank; JSON lines never do.
# White space as DuckDB's reader skips it: vertical tab and form feed too.
WHITESPACE = b" \t\r\n\x0b\x0c"
_IS_SPACE = np.zeros(256, dtype=bool)
_IS_SPACE[list(WHITESPACE)] = True


@dataclass(frozen=True)
class Block:
    """Bytes ``[offset, offset + size)`` hold ``newlines`` lines from ``first_line`` on."""

    offset: int
    size: int
    first_line: int
    newlines: int


@dataclass
class LineMap:
    """The line structure of one plain file: blocks, line count, blank lines."""

    blocks: list[Block] = field(default_factory=list)
    lines: int = 0
    # Runs of blank lines, each an (n, 2) array of (first line, how many), in order: a
    # file of blank lines was a line number each, eight bytes a line (1.8 GB for 100 MB
    # of newlines, 5 GB for a 1 MB gzip of 300 MB of them).
    blank: list[np.ndarray] = field(default_factory=list)
    ends_with_newline: bool = True

    @property
    def blank_runs(self) -> np.ndarray:
        """The (first line, how many) runs of blank lines, in order, as one array."""
        if not self.blank:
            return np.empty((0, 2), dtype=np.int64)
        if len(self.blank) > 1:
            self.blank[:] = [np.concatenate(self.blank)]
        return self.blank[0]

    @property
    def blank_lines(self) -> np.ndarray:
        """Sorted 1-based numbers of the blank (empty or white-space only) lines."""
        return lines_of_runs(self.blank_runs)

    @property
    def nonblank(self) -> int:
        """How many rows the JSON reader yields: one per non-blank line."""
        return self.lines - sum(int(b[:, 1].sum()) for b in self.blank)

    def row_lines(self, rows: np.ndarray) -> np.ndarray:
        """1-based line numbers of 1-based reader rows."""
        runs = self.blank_runs
        if not len(runs):
            return rows.astype(np.int64, copy=False)
        # Row r is the r-th non-blank line: past every run that starts before it. A run
        # starting at line s after c blank lines has s - 1 - c rows before it.
        before = np.zeros(len(runs) + 1, dtype=np.int64)
        np.cumsum(runs[:, 1], out=before[1:])
        rows_before = runs[:, 0] - 1 - before[:-1]
        passed = np.searchsorted(rows_before, rows, side="left")
        numbers: np.ndarray = rows.astype(np.int64, copy=False) + before[passed]
        return numbers


def runs_of(numbers: np.ndarray) -> np.ndarray:
    """Sorted distinct line numbers as (first line, how many) runs."""
    if not len(numbers):
        return np.empty((0, 2), dtype=np.int64)
    breaks = np.flatnonzero(np.diff(numbers) != 1) + 1
    firsts = np.concatenate(([0], breaks))
    counts = np.diff(np.concatenate((firsts, [len(numbers)])))
    return np.stack((numbers[firsts], counts), axis=1).astype(np.int64)


def lines_of_runs(runs: np.ndarray) -> np.ndarray:
    """The line numbers (first line, how many) runs hold, sorted."""
    if not len(runs):
        return np.empty(0, dtype=np.int64)
    counts = runs[:, 1]
    offsets = np.arange(int(counts.sum()), dtype=np.int64)
    offsets -= np.repeat(np.cumsum(counts) - counts, counts)
    return np.repeat(runs[:, 0], counts) + offsets


def _line_starts(data: bytes) -> np.ndarray:
    """Byte offset of every line start in `data` (a whole number of lines)."""
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == _NEWLINE)
    starts = np.empty(len(ends) + 1, dtype=np.int64)
    starts[0] = 0
    starts[1:] = ends + 1
    return starts


_WHITE = np.frombuffer(WHITESPACE, dtype=np.uint8)
# Candidates judged one by one below this many; past it, in one numpy pass over the data.
_FEW_CANDIDATES = 4096


def _blank_in(data: bytes, first_line: int) -> np.ndarray:
    """Numbers of the blank lines of `data` (exact numpy scan; called only when likely).

    A slice of about a MiB of whole lines at a time: the arrays of a line each (five
    int64 for a line of one byte) stay small whatever the block.
    """
    if len(data) <= 2 * _COUNT_SLICE:
        return _blank_in_slice(data, first_line)
    found, start, line = [], 0, first_line
    while start < len(data):
        cut = data.find(b"\n", start + _COUNT_SLICE - 1)
        end = len(data) if cut < 0 else cut + 1
        piece = data[start:end]
        found.append(_blank_in_slice(piece, line))
        line += piece.count(b"\n")
        start = end
    return np.concatenate(found)


def _blank_in_slice(data: bytes, first_line: int) -> np.ndarray:
    arr = np.frombuffer(data, dtype=np.uint8)
    starts = _line_starts(data)
    if starts[-1] == len(data):
        starts = starts[:-1]
    ends = np.append(starts[1:], len(data))
    maybe = np.flatnonzero((ends - starts <= 2) | np.isin(arr[starts], _WHITE))
    if len(maybe) <= _FEW_CANDIDATES:
        out = [first_line + int(i) for i in maybe
               if not data[starts[i] : ends[i]].strip(WHITESPACE)]
        return np.asarray(out, dtype=np.int64)
    # A file of blank lines (100 MB of newlines) judged each in Python took 50 s and
    # 1.9 GB: a line is blank when none of its bytes is other than white space.
    other = np.append(~np.isin(arr, _WHITE), False)
    bounds = np.empty(2 * len(maybe), dtype=np.int64)
    bounds[0::2] = starts[maybe]
    bounds[1::2] = ends[maybe]
    any_other = np.logical_or.reduceat(other, bounds)[0::2]
    return np.asarray(first_line + maybe[~any_other], dtype=np.int64)


# numpy compares a slice this size in cache; the whole block at once spills it.
_COUNT_SLICE = 1 << 20


@dataclass(frozen=True)
class LineScan:
    """What one pass over whole lines finds: how many newlines, whether any line may be
    blank (empty, or starting with white space, to be checked exactly), and where each
    scanned slice's last line ends (``cuts``: byte offset after that newline, newlines
    up to it), so a bad line's text is later read from its slice, not its whole block."""

    newlines: int
    maybe_blank: bool
    cuts: tuple[tuple[int, int], ...] = ()


def scan_lines(
    data: bytes | bytearray | memoryview, end: int | None = None,
    scratch: np.ndarray | None = None,
) -> LineScan:
    """Newlines in ``data[:end]`` (whole lines) and whether a line there may be blank.

    One numpy pass over cache-sized slices: the newlines' positions give their count,
    the first byte of every next line (a regular expression looking for a newline
    before white space cost a second, slower pass) and the slice's last line end.
    Every byte read is scanned: the line map beside DuckDB's parse, a follower's tail.
    `scratch`: a boolean array as long as a slice, for the comparisons to reuse.
    """
    stop = len(data) if end is None else end
    arr = np.frombuffer(data, dtype=np.uint8, count=stop)
    newlines = 0
    cuts: list[tuple[int, int]] = []
    maybe_blank = bool(stop) and bool(_IS_SPACE[arr[0]])
    for i in range(0, stop, _COUNT_SLICE):
        piece = arr[i : i + _COUNT_SLICE]
        at = np.flatnonzero(
            piece == _NEWLINE if scratch is None
            else np.equal(piece, _NEWLINE, out=scratch[: len(piece)])
        )
        if not len(at):
            continue
        newlines += len(at)
        cuts.append((i + int(at[-1]) + 1, newlines))
        if not maybe_blank:
            after = at + (i + 1)
            if after[-1] >= stop:  # the newline that ends the data starts no line
                after = after[:-1]
            maybe_blank = bool(_IS_SPACE[arr[after]].any())
    return LineScan(newlines, maybe_blank, tuple(cuts))


class MapBuilder:
    """Adds newline-aligned blocks to a `LineMap`, one after the other."""

    def __init__(self) -> None:
        self.map = LineMap()
        self._offset, self._line, self._last = 0, 1, b""
        # One comparison array for every slice: a fresh megabyte per slice was new
        # memory to the kernel as often as not (~4k page faults per 100 MB read).
        self._scratch = np.empty(_COUNT_SLICE, dtype=np.bool_)

    def add(
        self, data: bytes | bytearray | memoryview, end: int, scan: LineScan | None = None
    ) -> None:
        """Add ``data[:end]``, whole lines (the file's last one may lack its newline).

        `scan`: `scan_lines` of them, when the caller has it already.
        """
        if not end:
            return
        if scan is None:
            scan = scan_lines(data, end, self._scratch)
        if scan.maybe_blank:
            blank = _blank_in(bytes(data[:end]), self._line)
            if len(blank):
                self.map.blank.append(runs_of(blank))
        # One block per scanned slice (whole lines each): fetching a line reads ~1 MiB.
        start, before = 0, 0
        for cut, newlines in scan.cuts:
            if cut > end:  # a scan of more than `end` (never from this module's callers)
                break
            self.map.blocks.append(
                Block(self._offset + start, cut - start, self._line + before, newlines - before)
            )
            start, before = cut, newlines
        if start < end:  # the lines the cuts do not cover (all of them when none are given)
            self.map.blocks.append(Block(
                self._offset + start, end - start, self._line + before, scan.newlines - before
            ))
        self._offset += end
        self._line += scan.newlines
        self._last = bytes(data[end - 1 : end])

    def add_line(self, size: int, *, blank: bool, last: bytes) -> None:
        """Add one line of `size` bytes (its newline included when `last` is one)
        without its bytes: a line too long to hold (`file_map.map_file`)."""
        ended = last == b"\n"
        if blank:
            self.map.blank.append(np.asarray([[self._line, 1]], dtype=np.int64))
        self.map.blocks.append(Block(self._offset, size, self._line, int(ended)))
        self._offset += size
        self._line += int(ended)
        self._last = last

    def finish(self) -> LineMap:
        """The map, once every block is in."""
        self.map.ends_with_newline = self._last in (b"\n", b"")
        self.map.lines = self._line - 1 if self.map.ends_with_newline else self._line
        return self.map


def map_blocks(chunks: Iterable[bytes]) -> LineMap:
    """Build the map of a file from its bytes, given in newline-aligned chunks."""
    builder = MapBuilder()
    for data in chunks:
        builder.add(data, len(data))
    return builder.finish()


def map_chunk(data: bytes | memoryview, scan: LineScan) -> LineMap:
    """The map of `data`, whole lines already scanned (`scan_lines`)."""
    builder = MapBuilder()
    builder.add(data, len(data), scan)
    return builder.finish()


def fetch_lines(stream: BinaryIO, line_map: LineMap, numbers: Iterable[int]) -> dict[int, bytes]:
    """The text of the given lines (without their newline), read block by block."""
    wanted = sorted(set(numbers))
    out: dict[int, bytes] = {}
    i = 0
    for n, block in enumerate(line_map.blocks):
        unterminated = n == len(line_map.blocks) - 1 and not line_map.ends_with_newline
        last_line = block.first_line + block.newlines - (0 if unterminated else 1)
        if i >= len(wanted):
            break
        if wanted[i] > last_line:
            continue
        stream.seek(block.offset)
        data = stream.read(block.size)
        # Walk newline to newline up to each wanted line: bad lines are few, and a
        # C-level find per line beats numbering every line of the block.
        line, pos = block.first_line, 0
        while i < len(wanted) and wanted[i] <= last_line:
            while line < wanted[i]:
                newline = data.find(b"\n", pos)
                if newline < 0:
                    # The file shrank under the read (a copy-and-truncate rotation): the
                    # lines left are gone, which the read notes (`note_truncation`); the
                    # search raised, a traceback and exit 4.
                    return out
                pos = newline + 1
                line += 1
            end = data.find(b"\n", pos)
            out[line] = data[pos : end if end >= 0 else len(data)]
            i += 1
    return out
