"""Read JSON-lines logs into Arrow tables, fast when lines are clean, exact when not.

The fast path hands newline-aligned chunks of ~16 MiB to ``pyarrow.json`` with an
explicit schema. A chunk that fails (a non-JSON line, a truncated write, binary
garbage, an id logged as a number) is split in halves until the bad lines are
isolated; only those small leaves are parsed line by line in Python, so good lines
keep their exact line numbers and the bad ones become counted samples.

`ridtrace.forensics.reading.evidence` builds `analyze`'s faster read on these parsers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import BinaryIO

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from ridtrace.forensics.reading.schema import (
    FIELD_SETS,
    READ_FIELDS,
    RIDTRACE_SCHEMA,
    TIME_TYPE,
    read_schema,
)

CHUNK_BYTES = 16 << 20
ARROW_BLOCK_BYTES = 4 << 20
MAX_LINE_BYTES = 256 << 20
LEAF_LINES = 256
MAX_SAMPLES = 10


@dataclass(frozen=True)
class BadLine:
    """One rejected line: where it is and why."""

    file: str
    line: int
    reason: str


@dataclass
class ReadStats:
    """Counters of one read; bad lines are counted, a few kept as samples."""

    lines: int = 0
    bad_lines: int = 0
    files: int = 0
    samples: list[BadLine] = field(default_factory=list)
    skipped_files: list[str] = field(default_factory=list)

    def bad(self, file: str, line: int, reason: str) -> None:
        """Count a bad line and keep it as a sample while there is room."""
        self.bad_lines += 1
        if len(self.samples) < MAX_SAMPLES:
            self.samples.append(BadLine(file, line, reason))


_SLOW_SCHEMA = read_schema()
_READ_OPTIONS = pj.ReadOptions(use_threads=True, block_size=ARROW_BLOCK_BYTES)


def _complete(table: pa.Table) -> pa.Table:
    """Give a table read with a narrow field set every `READ_FIELDS` column, status as text."""
    n = table.num_rows
    cols = []
    for name in READ_FIELDS:
        idx = table.schema.get_field_index(name)
        if idx < 0:
            cols.append(pa.nulls(n, TIME_TYPE if name == "time" else pa.string()))
        elif name == "status" and table.schema.field(idx).type != pa.string():
            cols.append(table.column(idx).cast(pa.string()))
        else:
            cols.append(table.column(idx))
    return pa.Table.from_arrays(cols, names=list(READ_FIELDS))


def _fits(fmt: str, table: pa.Table) -> bool:
    """A narrow read is only right if every row is in that format."""
    if fmt == "ridtrace":
        return bool(pc.all(pc.equal(table["schema"], RIDTRACE_SCHEMA)).as_py())
    if fmt == "dynamo":
        return bool(pc.all(pc.is_valid(table["target"])).as_py())
    return True


class _ChunkParser:
    """Arrow's reader trying per-format field sets; the one that fitted last goes first."""

    def __init__(self, *, lean: bool, fields: tuple[str, ...] | None = None) -> None:
        self._complete = fields is None
        if fields is not None:  # one narrow read for every format, returned as is
            options = pj.ParseOptions(
                explicit_schema=read_schema(fields), unexpected_field_behavior="ignore"
            )
            self._variants = [("any", options)]
            return
        self._variants = [
            (fmt, pj.ParseOptions(
                explicit_schema=read_schema(FIELD_SETS[(fmt, lean)], int_status=fmt == "ridtrace"),
                unexpected_field_behavior="ignore",
            ))
            for fmt in ("ridtrace", "dynamo", "any")
        ]

    def fast(self, buf: bytes) -> pa.Table | None:
        """Parse `buf` whole, or return None if any line in it is not clean."""
        if not buf.isascii():
            try:
                buf.decode("utf-8")
            except UnicodeDecodeError:
                return None
        for pos, (fmt, options) in enumerate(self._variants):
            table = _try(buf, options)
            if table is not None and _fits(fmt, table):
                if pos:
                    self._variants.insert(0, self._variants.pop(pos))
                return _complete(table) if self._complete else table
        return None


def _try(buf: bytes, options: pj.ParseOptions) -> pa.Table | None:
    try:
        return pj.read_json(pa.BufferReader(buf), read_options=_READ_OPTIONS, parse_options=options)
    except pa.ArrowInvalid as exc:
        if "straddl" not in str(exc):
            return None
    # A line longer than Arrow's block: one block for the whole buffer.
    try:
        big = pj.ReadOptions(use_threads=False, block_size=len(buf) + 1)
        return pj.read_json(pa.BufferReader(buf), read_options=big, parse_options=options)
    except pa.ArrowInvalid:
        return None


def iter_chunks(
    stream: BinaryIO, on_bytes: Callable[[int], None] | None = None
) -> Iterator[tuple[bytes, int, int]]:
    """Yield newline-aligned chunks, the 1-based number of their first line, their line count.

    A line longer than `MAX_LINE_BYTES` is yielded alone, cut, so memory stays bounded;
    it then fails to parse and is reported as a bad line.
    """
    carry = b""
    line_no = 1
    while True:
        data = stream.read(CHUNK_BYTES)
        if on_bytes is not None:
            on_bytes(len(data))
        if not data:
            if carry:
                yield carry, line_no, carry.count(b"\n") + 1
            return
        cut = data.rfind(b"\n")
        if cut < 0:
            buf = carry + data
            if len(buf) > MAX_LINE_BYTES:
                yield buf[:MAX_LINE_BYTES], line_no, 1
                rest = b""
                while b"\n" not in rest:  # skip the remainder of the monster line
                    rest = stream.read(CHUNK_BYTES)
                    if not rest:
                        return
                carry = rest[rest.index(b"\n") + 1 :]
                line_no += 1
            else:
                carry = buf
            continue
        # One copy at most: the carried partial line joined to the new whole lines.
        whole = data if cut == len(data) - 1 else memoryview(data)[: cut + 1]
        chunk = b"".join((carry, whole)) if carry else bytes(whole)
        carry = data[cut + 1 :]
        count = chunk.count(b"\n")
        yield chunk, line_no, count
        line_no += count


def _nonblank(lines: list[bytes], first_line: int) -> list[int]:
    return [first_line + i for i, text in enumerate(lines) if text.strip()]


def _split_lines(buf: bytes) -> list[bytes]:
    lines = buf.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _classify(text: bytes) -> str | None:
    """Reason a stripped line is obviously not a JSON object, or None if it may be."""
    if text[:1] != b"{":
        if b"\x00" in text or not text.isascii():
            return "binary data"
        return "not JSON"
    if text[-1:] != b"}":
        return "truncated JSON"
    return None


def _parse_time(value: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)


def _leaf_row(text: bytes) -> dict[str, object] | str:
    """Parse one line the slow way; returns the row or the reason it is bad."""
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        try:
            text.decode("utf-8")
        except UnicodeDecodeError:
            return "invalid UTF-8"
        return "not JSON"
    if not isinstance(obj, dict):
        return "not a JSON object"
    row: dict[str, object] = {}
    for key in READ_FIELDS:
        value = obj.get(key)
        if value is None or isinstance(value, str):
            row[key] = value
        elif isinstance(value, (bool, dict, list)):
            return f"wrong type for {key}"
        else:  # an id or status logged as a number: keep it, as text
            row[key] = str(value)
    if isinstance(row["time"], str):
        parsed = _parse_time(row["time"])
        if parsed is None:
            return "invalid time"
        row["time"] = parsed
    return row


def _leaf(
    lines: list[bytes], numbers: list[int], stats: ReadStats, name: str
) -> tuple[pa.Table, list[int]] | None:
    rows: list[dict[str, object]] = []
    kept: list[int] = []
    for text, number in zip(lines, numbers, strict=True):
        result = _leaf_row(text)
        if isinstance(result, str):
            stats.bad(name, number, result)
        else:
            rows.append(result)
            kept.append(number)
    if not rows:
        return None
    return pa.Table.from_pylist(rows, schema=_SLOW_SCHEMA), kept


def _salvage(
    parser: _ChunkParser, buf: bytes, first_line: int, stats: ReadStats, name: str
) -> list[tuple[pa.Table, list[int]]]:
    lines = _split_lines(buf)
    return _salvage_lines(parser, lines, range(first_line, first_line + len(lines)), stats, name)


def _salvage_lines(
    parser: _ChunkParser,
    lines: Sequence[bytes],
    numbers: Sequence[int],
    stats: ReadStats,
    name: str,
) -> list[tuple[pa.Table, list[int]]]:
    cand_text: list[bytes] = []
    cand_no: list[int] = []
    for text, number in zip(lines, numbers, strict=True):
        stripped = text.strip()
        if not stripped:
            continue
        stats.lines += 1
        reason = _classify(stripped)
        if reason is None:
            cand_text.append(stripped)
            cand_no.append(number)
        else:
            stats.bad(name, number, reason)
    out: list[tuple[pa.Table, list[int]]] = []

    def solve(lo: int, hi: int) -> None:
        if hi <= lo:
            return
        if hi - lo <= LEAF_LINES:
            leaf = _leaf(cand_text[lo:hi], cand_no[lo:hi], stats, name)
            if leaf is not None:
                out.append(leaf)
            return
        table = parser.fast(b"\n".join(cand_text[lo:hi]) + b"\n")
        # Two objects on one line parse as two rows: not clean, keep splitting.
        if table is not None and table.num_rows == hi - lo:
            out.append((table, cand_no[lo:hi]))
            return
        mid = (lo + hi) // 2
        solve(lo, mid)
        solve(mid, hi)

    solve(0, len(cand_text))
    return out


def parse_chunk(
    parser: _ChunkParser, buf: bytes, first_line: int, newlines: int, stats: ReadStats, name: str
) -> list[tuple[pa.Table, np.ndarray]]:
    """Parse one chunk of `newlines` lines into (table, line numbers) pieces.

    Bad lines go to `stats`; good lines keep their exact line numbers.
    """
    table = parser.fast(buf)
    if table is not None and table.num_rows == newlines:
        stats.lines += newlines
        return [(table, np.arange(first_line, first_line + newlines, dtype=np.int64))]
    if table is not None:  # Arrow skips blank lines: map rows to the non-blank ones
        numbers = _nonblank(_split_lines(buf), first_line)
        if table.num_rows == len(numbers):
            stats.lines += len(numbers)
            return [(table, np.asarray(numbers, dtype=np.int64))]
    return [
        (tbl, np.asarray(nums, dtype=np.int64))
        for tbl, nums in _salvage(parser, buf, first_line, stats, name)
    ]


def new_parser(*, lean: bool = False) -> _ChunkParser:
    """A chunk parser for one file (it remembers which format fitted last).

    ``lean`` reads only the fields `analyze` needs; display fields stay null.
    """
    return _ChunkParser(lean=lean)
