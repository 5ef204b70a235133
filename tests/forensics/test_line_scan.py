"""Numbering lines beside the parse: one numpy pass finds the newlines and the lines
that may be blank, across the slices it reads in, so a reader row maps to its line."""

from __future__ import annotations

import io

import numpy as np
import pytest

from ridtrace.forensics.reading.file_map import map_file
from ridtrace.forensics.reading.lines import (
    _COUNT_SLICE,
    BLOCK_BYTES,
    fetch_lines,
    map_blocks,
    scan_lines,
)

LINE = b'{"time":"2026-11-30T10:00:00Z","schema":"ridtrace/1","event":"request.start"}\n'


def _lines_until(size: int) -> bytes:
    return LINE * (size // len(LINE) + 1)


@pytest.mark.parametrize("blank", [b"\n", b"   \n", b"\t\n", b"\r\n", b"\x0b\x0c\n"])
@pytest.mark.parametrize("where", ["start", "slice edge", "after edge", "end"])
def test_a_blank_line_anywhere_is_found(blank: bytes, where: str) -> None:
    body = _lines_until(_COUNT_SLICE)
    cut = {
        "start": 0,
        # The blank line starts right after the slice's last newline, or one slice on.
        "slice edge": body.rfind(b"\n", 0, _COUNT_SLICE) + 1,
        "after edge": body.find(b"\n", _COUNT_SLICE) + 1,
        "end": len(body),
    }[where]
    data = body[:cut] + blank + body[cut:]
    scan = scan_lines(data)
    assert scan.newlines == data.count(b"\n") and scan.maybe_blank
    line_map = map_file(io.BufferedReader(io.BytesIO(data)))  # type: ignore[arg-type]
    blank_line = data[:cut].count(b"\n") + 1
    assert line_map.blank_lines.tolist() == [blank_line]
    rows = np.arange(1, line_map.nonblank + 1)
    assert blank_line not in line_map.row_lines(rows).tolist()


def test_json_lines_alone_are_not_scanned_for_blanks() -> None:
    data = _lines_until(3 * _COUNT_SLICE)
    scan = scan_lines(data)
    assert scan.newlines == data.count(b"\n") and not scan.maybe_blank
    # The newline that ends the data starts no line: nothing after it may be blank.
    assert not scan_lines(data, len(data)).maybe_blank
    assert map_blocks([data]).blank_lines.tolist() == []


def test_a_line_starting_with_white_space_may_be_blank_and_is_checked_exactly() -> None:
    data = LINE + b'  {"time":"2026-11-30T10:00:01Z"}\n' + LINE
    assert scan_lines(data).maybe_blank
    assert map_blocks([data]).blank_lines.tolist() == []  # indented JSON is no blank line


class _CountingReader(io.BytesIO):
    """A file that counts the bytes read from it."""

    read_bytes = 0

    def read(self, size: int | None = -1, /) -> bytes:
        data = super().read(size)
        self.read_bytes += len(data)
        return data


def test_fetching_a_bad_line_reads_its_slice_not_its_whole_block() -> None:
    # A bad line's text is read back for its reason: with thousands of them, reading a
    # 16 MiB block and walking its lines per bad line cost more than the parse.
    lines = [b'{"n":%d,"pad":"%s"}\n' % (i, b"x" * (i % 97)) for i in range(400_000)]
    data = b"".join(lines)
    assert len(data) > BLOCK_BYTES + 4 * _COUNT_SLICE
    line_map = map_file(io.BufferedReader(io.BytesIO(data)))  # type: ignore[arg-type]
    wanted = [1, 123_457, 250_000, 400_000]
    stream = _CountingReader(data)
    got = fetch_lines(stream, line_map, wanted)
    assert got == {n: lines[n - 1].rstrip(b"\n") for n in wanted}
    assert stream.read_bytes <= len(wanted) * (_COUNT_SLICE + 64 * 1024)
    # Every line is found from its slice, the first and last of each included.
    edges = sorted({b.first_line for b in line_map.blocks}
                   | {b.first_line + b.newlines - 1 for b in line_map.blocks})
    assert fetch_lines(io.BytesIO(data), line_map, edges) == {
        n: lines[n - 1].rstrip(b"\n") for n in edges
    }


def test_a_last_line_without_newline_is_fetched_from_its_own_block() -> None:
    data = _lines_until(3 * _COUNT_SLICE) + b"torn"
    line_map = map_blocks([data])
    assert not line_map.ends_with_newline and line_map.lines == data.count(b"\n") + 1
    assert fetch_lines(io.BytesIO(data), line_map, [line_map.lines, 1]) == {
        line_map.lines: b"torn", 1: LINE.rstrip(b"\n"),
    }


def test_a_reused_comparison_array_scans_as_a_fresh_one_does() -> None:
    # The line map hands every scan one boolean array (a fresh megabyte per slice was
    # new memory to the kernel); stale flags from a longer slice must not leak into a
    # shorter one, nor a slice's newlines into the next.
    rng = np.random.default_rng(5)
    scratch = np.ones(_COUNT_SLICE, dtype=np.bool_)  # every flag set: stale on purpose
    for size in (1, 999, _COUNT_SLICE - 1, _COUNT_SLICE, 2 * _COUNT_SLICE + 77):
        data = rng.choice(np.frombuffer(b"ab \n{}", dtype=np.uint8), size).tobytes()
        assert scan_lines(data, scratch=scratch) == scan_lines(data)
        assert scan_lines(data, size // 2, scratch) == scan_lines(data, size // 2)


def test_a_file_read_in_small_pieces_maps_every_line_across_the_reads() -> None:
    body = _lines_until(3 * _COUNT_SLICE) + b'{"a":1}' * 300_000 + b"\n" + LINE * 5
    line_map = map_file(io.BufferedReader(io.BytesIO(body)))  # type: ignore[arg-type]
    lines = body.split(b"\n")[:-1]
    numbers = [1, 2, len(lines) // 2, len(lines) - 6, len(lines) - 5, len(lines)]
    got = fetch_lines(io.BytesIO(body), line_map, numbers)
    assert got == {n: lines[n - 1] for n in numbers}


def test_a_small_file_that_grows_while_mapped_is_mapped_to_its_end(tmp_path) -> None:
    # The read buffer is sized to the file when it opens (a megabyte per small file was
    # most of a pod directory's line maps); lines written after that are still read.
    path = tmp_path / "growing.jsonl"
    path.write_bytes(LINE * 3)
    more = LINE * 20_000 + b'{"long":"' + b"x" * 300_000 + b'"}\n' + LINE
    with open(path, "rb") as stream:
        with open(path, "ab") as writer:
            writer.write(more)
        line_map = map_file(stream)
    body = LINE * 3 + more
    lines = body.split(b"\n")[:-1]
    assert line_map.lines == len(lines)
    numbers = [1, 4, len(lines) - 1, len(lines)]
    with open(path, "rb") as again:
        assert fetch_lines(again, line_map, numbers) == {n: lines[n - 1] for n in numbers}


def test_lines_of_a_file_that_shrank_since_its_map_are_left_out() -> None:
    # copytruncate between the line map and the fetch of a bad line's text: the search
    # for a newline no longer there raised ValueError, a traceback and exit 4.
    lines = [b'{"n":%d}\n' % i for i in range(1000)]
    data = b"".join(lines)
    line_map = map_file(io.BufferedReader(io.BytesIO(data)))  # type: ignore[arg-type]
    shrunk = io.BytesIO(b"".join(lines[:10]))
    assert fetch_lines(shrunk, line_map, [3, 500, 1000]) == {3: lines[2].rstrip(b"\n")}


def test_a_run_of_blank_lines_is_held_as_one_run() -> None:
    # A line number each, eight bytes a line: 100 MB of newlines took 1.9 GB (and 50 s,
    # each candidate judged in Python); a gzip of 300 MB of them 5.2 GB.
    data = b'{"n":1}\n' + b"\n" * 3_000_000 + b'{"n":2}\n \n{"n":3}\n'
    line_map = map_blocks([data])
    assert line_map.blank_runs.tolist() == [[2, 3_000_000], [3_000_003, 1]]
    assert line_map.nonblank == 3
    assert line_map.row_lines(np.array([1, 2, 3])).tolist() == [1, 3_000_002, 3_000_004]
    assert line_map.blank_lines[[0, -1]].tolist() == [2, 3_000_003]
