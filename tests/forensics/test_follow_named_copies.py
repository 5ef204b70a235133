"""A log named on the command line (or by a glob) keeps its lines through copytruncate.

logrotate's ``copytruncate`` copies the log to ``app.jsonl.1`` (or ``.1.gz``), then
truncates it: the lines written after the follower's last read are in the copy only.
A followed directory's walk finds the copy; a named log had nothing to find it.
"""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import pytest

from ridtrace.forensics.live.watch import Watch
from ridtrace.forensics.reading.stats import ReadStats
from tests.forensics.helpers import watched_lines


@pytest.mark.parametrize("named", ["file", "glob"])
@pytest.mark.parametrize("copy_as", ["app.jsonl.1", "app.jsonl.1.gz"])
def test_lines_written_before_a_copytruncate_are_read_from_the_copy(
    tmp_path: Path, named: str, copy_as: str
) -> None:
    log = tmp_path / "app.jsonl"
    log.write_bytes(b'{"n": 1}\n{"n": 2}\n')
    # Yesterday's rotation, another content: not named, not read.
    (tmp_path / "app.jsonl.2").write_bytes(b'{"old": 1}\n')
    watch = Watch([str(log) if named == "file" else str(tmp_path / "*.jsonl")], ReadStats(),
                  from_start=True)
    assert [n for _, n, _ in watched_lines(watch)] == [1, 2]
    with open(log, "ab") as fh:
        fh.write(b'{"n": 3}\n')  # written after that read
    copy = tmp_path / copy_as
    if copy_as.endswith(".gz"):
        copy.write_bytes(gzip.compress(log.read_bytes()))
    else:
        shutil.copyfile(log, copy)
    os.truncate(log, 0)
    with open(log, "ab") as fh:
        fh.write(b'{"n": 4}\n')
    assert sorted(watched_lines(watch)) == sorted(
        [(copy_as, 3, b'{"n": 3}'), ("app.jsonl", 1, b'{"n": 4}')]
    )
    assert watched_lines(watch) == []
    assert watch.stats.bad_lines == 0
    watch.close()


def test_older_parts_beside_a_named_log_are_not_read(tmp_path: Path) -> None:
    log = tmp_path / "app.jsonl"
    log.write_bytes(b'{"n": 1}\n')
    watch = Watch([str(log)], ReadStats())
    watch.discover()
    (tmp_path / "app.jsonl.1").write_bytes(b'{"old": 1}\n')  # not a copy of what was read
    (tmp_path / "other.jsonl").write_bytes(b'{"other": 1}\n')  # another log
    (tmp_path / "app.jsonl.2").symlink_to(tmp_path / "gone")  # a broken part: no input
    with open(log, "ab") as fh:
        fh.write(b'{"n": 2}\n')
    assert watched_lines(watch) == [("app.jsonl", 2, b'{"n": 2}')]
    assert watched_lines(watch) == []
    assert (watch.stats.unreadable_files, watch.stats.ignored_files) == ([], [])
    watch.close()


def test_a_copy_seen_before_its_first_line_was_whole_is_followed(tmp_path: Path) -> None:
    log = tmp_path / "app.jsonl"
    log.write_bytes(b'{"n": 1}\n')
    watch = Watch([str(log)], ReadStats(), from_start=True)
    assert [n for _, n, _ in watched_lines(watch)] == [1]
    with open(log, "ab") as fh:
        fh.write(b'{"n": 2}\n')
    copy = tmp_path / "app.jsonl.1"
    copy.write_bytes(b'{"n"')  # cp has begun
    assert watched_lines(watch) == [("app.jsonl", 2, b'{"n": 2}')]
    stamp = copy.stat().st_mtime_ns
    with open(copy, "ab") as fh:
        fh.write(b': 1}\n{"n": 2}\n{"n": 3}\n')  # within the same clock tick: one mtime
    os.utime(copy, ns=(stamp, stamp))
    os.truncate(log, 0)
    assert watched_lines(watch) == [("app.jsonl.1", 3, b'{"n": 3}')]
    watch.close()
