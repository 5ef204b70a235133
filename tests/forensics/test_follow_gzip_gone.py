"""A followed compressed file that loses its name before its first line could be decoded.

The tail holds the file open, so it reads every line of it whatever name it has, or
none: recognising its content (`FileTail._claim_head`) by opening its name again failed
once the name was gone ("read failed", the run incomplete, its lines lost).
"""

from __future__ import annotations

import gzip
import random
import zlib
from pathlib import Path

import pytest

from ridtrace.forensics.live.watch import Watch
from ridtrace.forensics.reading.stats import ReadStats
from tests.forensics.helpers import watched_numbers


def _packed(lines: int) -> bytes:
    # Lines that do not repeat: the first ones come out of the decoder a few bytes at a
    # time, so a cut can fall inside the first line, and the file is as big as its lines.
    rng = random.Random(0)
    text = b"".join(b'{"n": %d, "pad": "%s"}\n' % (k, rng.randbytes(100).hex().encode())
                    for k in range(lines))
    return gzip.compress(text, mtime=0)


def _decoded(data: bytes) -> bytes:
    return zlib.decompressobj(wbits=31).decompress(data)


def _first_cut(data: bytes, part: str) -> int:
    """Where the writer pauses: after the gzip header (nothing to decode yet), or inside
    the deflate stream where its first decoded bytes are part of the first line."""
    if part == "header":
        return 10
    return next(cut for cut in range(10, len(data)) if _decoded(data[:cut]))


def _lose_name(packed: Path, how: str, elsewhere: Path) -> None:
    if how == "removed":
        packed.unlink()
    else:  # moved where no rotation of the named file is looked for
        packed.rename(elsewhere / packed.name)


def _read_on(watch: Watch) -> list[int]:
    """The line numbers the watch hands out, poll after poll, until a poll gives none."""
    numbers: list[int] = []
    for _ in range(100):
        got = watched_numbers(watch)
        if not got:
            return numbers
        numbers += got
    raise AssertionError("the watch never stopped handing out lines")


# A small file, and one bigger than what the tail's decoder reads of it at once (1 MiB):
# the head is looked at while the decoder is part way through it, and must not move it
# (a duplicate of the descriptor shares its offset: the decoder read on from elsewhere).
@pytest.mark.parametrize("lines", [50, 12_000])
@pytest.mark.parametrize("part", ["header", "first line"])
@pytest.mark.parametrize("how", ["removed", "moved away"])
def test_a_compressed_file_that_loses_its_name_is_read_whole(tmp_path: Path, part: str,
                                                             how: str, lines: int) -> None:
    logs, elsewhere = tmp_path / "logs", tmp_path / "elsewhere"
    logs.mkdir()
    elsewhere.mkdir()
    packed = logs / "app.jsonl.1.gz"
    watch = Watch([str(packed)], ReadStats())
    assert watched_numbers(watch) == []  # not there yet: the follow has started
    data = _packed(lines)
    assert lines < 100 or len(data) > 1 << 20
    cut = _first_cut(data, part)
    assert b"\n" not in _decoded(data[:cut])  # no whole line to recognise it by yet
    with open(packed, "wb") as fh:
        fh.write(data[:cut])
        fh.flush()
        assert watched_numbers(watch) == []  # followed (opened), nothing whole to read
        assert watch.tails
        _lose_name(packed, how, elsewhere)
        fh.write(data[cut:])
    assert _read_on(watch) == list(range(1, lines + 1))
    assert (watch.stats.bad_lines, watch.stats.unreadable_files) == (0, [])
    assert not watch.tails  # read to its end: closed
