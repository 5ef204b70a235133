"""A compressed file that appears while `gzip` still writes it, pausing between writes."""

from __future__ import annotations

import gzip
from pathlib import Path

from ridtrace.forensics.live.watch import Watch
from ridtrace.forensics.reading.stats import ReadStats
from tests.forensics.helpers import watched_numbers


def _packed(lines: int) -> bytes:
    return gzip.compress(b"".join(b'{"n": %d}\n' % k for k in range(lines)), mtime=0)


def test_a_gzip_that_pauses_between_writes_is_read_once_whole(tmp_path: Path) -> None:
    # A rotated part gzip'ed into the followed directory (or shipped there): gzip writes
    # it in bursts. Two polls that saw it the same size between two bursts took its end
    # for a tear: a torn last line (a bad line), "gzip stream truncated" (the run
    # incomplete, exit 3 on clean logs), and its lines read twice once it was whole.
    watch = Watch([str(tmp_path)], ReadStats())
    watch.discover()
    data = _packed(400)
    packed = tmp_path / "other.jsonl.1.gz"
    with open(packed, "wb") as fh:
        fh.write(data[: len(data) // 2])
        fh.flush()
        assert watched_numbers(watch) == []
        assert watched_numbers(watch) == []  # the same size: gzip is between two writes
        fh.write(data[len(data) // 2 :])
    assert watched_numbers(watch) == list(range(1, 401))
    assert watched_numbers(watch) == []
    assert (watch.stats.bad_lines, watch.stats.unreadable_files) == (0, [])


def test_a_torn_gzip_is_read_up_to_its_tear_when_the_follow_stops(tmp_path: Path) -> None:
    # Its writer killed: once the follow stops, the tear is final, as the batch read
    # takes it, however recently the file was written.
    watch = Watch([str(tmp_path)], ReadStats())
    watch.discover()
    data = _packed(400)
    (tmp_path / "other.jsonl.1.gz").write_bytes(data[: len(data) // 2])
    assert watched_numbers(watch) == []
    watch.bound()
    read = watched_numbers(watch)
    assert read and read == list(range(1, len(read) + 1))
    assert watched_numbers(watch) == []  # done: noted, and closed
    (note,) = watch.stats.unreadable_files
    assert "gzip stream truncated" in note.reason
