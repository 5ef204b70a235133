"""Lines over DuckDB's object limit: found from the line map, always bad, never a crash."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import pytest

from ridtrace.forensics.reading.connection import connect
from ridtrace.forensics.reading.crash_holes import HOLE_KEPT_BYTES
from ridtrace.forensics.reading.file_map import map_file
from ridtrace.forensics.reading.files import parse
from ridtrace.forensics.reading.lines import fetch_lines, map_blocks
from ridtrace.forensics.reading.overlong import (
    LONG_LINE_REASON,
    MAX_LINE_BYTES,
    LongLine,
    after_hole,
    copy_without,
    long_lines,
    without_long_lines,
)
from ridtrace.forensics.reading.plain_copy import newline_chunks
from ridtrace.forensics.reading.stats import BadLine, ReadStats
from tests.forensics.helpers import rt_request

LIMIT = 100


def _text(size: int) -> bytes:
    return b"x" * size


@pytest.mark.parametrize("terminated", [True, False])
def test_only_lines_over_the_limit_are_found(tmp_path: Path, terminated: bool) -> None:
    lines = [b"a", _text(LIMIT), _text(LIMIT + 1), b"", b"b", _text(3 * LIMIT)]
    data = b"\n".join(lines) + (b"\n" if terminated else b"")
    path = tmp_path / "x.jsonl"
    path.write_bytes(data)
    found = long_lines(path, map_blocks([data]), LIMIT)
    assert [x.line for x in found] == [3, 6]  # a line of exactly LIMIT bytes is kept
    for x in found:
        assert data[x.start : x.end] == lines[x.line - 1]


def test_a_file_without_a_long_line_is_not_read_again(tmp_path: Path) -> None:
    # Blocks are cut at least every MiB: none is over the limit, so no byte is read.
    data = b"\n".join(_text(1000) for _ in range(40_000)) + b"\n"
    line_map = map_file(io.BufferedReader(io.BytesIO(data)))  # type: ignore[arg-type]
    assert max(b.size for b in line_map.blocks) < MAX_LINE_BYTES
    assert long_lines(tmp_path / "never-opened.jsonl", line_map) == []


def test_the_copy_keeps_line_numbers(tmp_path: Path) -> None:
    data = b"a\n" + _text(LIMIT + 5) + b"\nb\n" + _text(LIMIT + 1)
    path = tmp_path / "x.jsonl"
    path.write_bytes(data)
    line_map = map_blocks([data])
    found = long_lines(path, line_map, LIMIT)
    assert found == [LongLine(2, 2, 2 + LIMIT + 5), LongLine(4, len(data) - LIMIT - 1, len(data))]
    out = io.BytesIO()
    copy_without(path, out, found)
    assert out.getvalue() == b"a\n\nb\n"
    numbered = without_long_lines(line_map, found)
    assert numbered.lines == line_map.lines == 4
    assert numbered.blank_lines.tolist() == [2, 4]


def test_a_line_duckdb_happens_to_read_is_still_bad(tmp_path: Path) -> None:
    # 20 MiB at the start of a file fits DuckDB's buffers; further in it fails the
    # query. Either way it is one bad line, so every split of the file agrees.
    long = b'{"time":"2026-11-29T10:00:00Z","schema":"ridtrace/1","message":"'
    long += b"a" * (20 << 20) + b'"}'
    after = rt_request("0000000000000001", "r1", 0.0, 0.1)
    path = tmp_path / "x.jsonl"
    path.write_bytes(long + b"\n" + "\n".join(after).encode() + b"\n")
    with open(path, "rb") as fh:
        line_map = map_file(fh)
    copies = set(Path(tempfile.gettempdir()).glob("ridtrace-long-lines-*"))
    stats = ReadStats()
    con = connect()
    try:
        table = parse(con, path, line_map, "x.jsonl", stats, lean=True, window=None)
        spans, lines = table.spans()
    finally:
        con.close()
    assert stats.samples == [BadLine("x.jsonl", 1, LONG_LINE_REASON)]
    assert (stats.lines, stats.bad_lines) == (3, 1)
    assert spans["request_id"].to_pylist() == ["r1"]
    assert lines["first_line"].tolist() == [2] and lines["last_line"].tolist() == [3]
    # The copy DuckDB read is gone once the rows are out.
    assert set(Path(tempfile.gettempdir()).glob("ridtrace-long-lines-*")) == copies


@pytest.mark.parametrize("ending", [b"\n", b""])
def test_a_line_longer_than_the_buffer_is_mapped_as_one_not_held(
    tmp_path: Path, ending: bytes,
) -> None:
    # map_file passes over such a line (see tests/cli/test_endless_lines.py for the
    # memory); the map must be the one the whole bytes give.
    buffer = 64
    lines = [b"a", _text(buffer), _text(3 * buffer + 5), b"b", b" " * (2 * buffer), b"",
             b"c" * (buffer - 1), _text(buffer + 1)]
    data = b"\n".join(lines) + ending
    path = tmp_path / "x.jsonl"
    path.write_bytes(data)
    with open(path, "rb", buffering=0) as raw:
        mapped = map_file(io.BufferedReader(raw, buffer), size=buffer, longest=buffer)
    whole = map_blocks([data])
    assert (mapped.lines, mapped.ends_with_newline) == (whole.lines, whole.ends_with_newline)
    assert mapped.blank_lines.tolist() == whole.blank_lines.tolist() == [5, 6]
    assert long_lines(path, mapped, buffer) == long_lines(path, whole, buffer)
    assert [x.line for x in long_lines(path, mapped, buffer)] == [3, 5, 8]
    with open(path, "rb") as fh:
        assert fetch_lines(fh, mapped, range(1, 9)) == dict(enumerate(lines, 1))


def test_a_staged_line_keeps_a_holes_first_bytes_then_what_follows_it() -> None:
    # A gzip's or a Dask block's copy cut a line at max_line + 1 bytes: a record after a
    # hole longer than that was lost, where the plain read judges it (`after_hole`).
    data = (b"a\n" + b"\0" * 500 + b"{rec}\n" + b"x" * 300 + b"\n"
            + b"\0" * 50 + b"y" * 300 + b"\n" + b"short\n" + b"\0" * 30 + b"z\n")
    chunks = list(newline_chunks(io.BytesIO(data), size=16, max_line=100))
    assert all(chunk.endswith(b"\n") for chunk in chunks)
    assert b"".join(chunks).split(b"\n") == [
        b"a", b"\0" * 101 + b"{rec}", b"x" * 101, b"\0" * 50 + b"y" * 101, b"short",
        b"\0" * 30 + b"z", b""]


def test_a_line_after_a_hole_is_judged_by_the_holes_first_bytes(tmp_path: Path) -> None:
    # Read whole, a preallocated log of 10 GB of NULs took 10 GB of memory.
    path = tmp_path / "app.jsonl"
    path.write_bytes(b"head-line\n" + b"\0" * (HOLE_KEPT_BYTES + 1000) + b"{}")
    end = path.stat().st_size
    with open(path, "rb") as fh:
        text = after_hole(fh, LongLine(2, 10, end, body=end - 2))
    assert text == b"\0" * HOLE_KEPT_BYTES + b"{}"
