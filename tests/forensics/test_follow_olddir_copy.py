"""A copytruncate copy logrotate puts in another directory (its ``olddir``) is a copy.

With ``olddir old`` (relative to the log's directory) the copy is ``old/app.jsonl.1``,
which the walk of a followed ``logs/`` finds. Taken for another log, it was read from
its first line: every line already read from ``app.jsonl`` was read twice, counted
twice in the summary and its requests judged again.
"""

from __future__ import annotations

import gzip
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from ridtrace.forensics.live.watch import Watch
from ridtrace.forensics.reading.stats import ReadStats
from tests.forensics.helpers import watched_lines


def _gzip_copy(log: Path, copy: Path) -> None:
    with gzip.open(copy, "wb") as packed:
        packed.write(log.read_bytes())


@pytest.mark.parametrize(("start", "copy_name", "make_copy"), [
    (b"", "old/app.jsonl.1", shutil.copyfile),
    # The plain log's head was read with its byte-order mark, the gzip copy's without
    # (the decoder takes it off): no copy of it, so every line was read again (its bad
    # lines twice: over 1 %, exit 3, where analyze of the same files exits 0).
    (b"\xef\xbb\xbf", "app.jsonl.1.gz", _gzip_copy),
], ids=["olddir", "gzip-of-a-bom-log"])
def test_a_copy_in_logrotates_olddir_gives_only_its_unread_lines(
    tmp_path: Path, start: bytes, copy_name: str, make_copy: Callable[[Path, Path], object],
) -> None:
    log = tmp_path / "app.jsonl"
    log.write_bytes(start + b'{"n": 1, "t": "10:00:00.000001"}\n{"n": 2}\n')
    (tmp_path / "old").mkdir()
    watch = Watch([str(tmp_path)], ReadStats(), from_start=True)
    assert [n for _, n, _ in watched_lines(watch)] == [1, 2]
    with open(log, "ab") as fh:
        fh.write(b'{"n": 3}\n')  # written after that read: in the copy only
    make_copy(log, tmp_path / copy_name)
    os.truncate(log, 0)
    with open(log, "ab") as fh:
        fh.write(b'{"n": 4}\n')
    assert sorted(watched_lines(watch)) == sorted(
        [(Path(copy_name).name, 3, b'{"n": 3}'), ("app.jsonl", 1, b'{"n": 4}')]
    )
    watch.close()


def test_a_log_of_the_same_name_in_another_directory_is_no_copy(tmp_path: Path) -> None:
    # Two services' logs, both app.jsonl and opening alike: each is read whole.
    for service in ("a", "b"):
        (tmp_path / service).mkdir()
        (tmp_path / service / "app.jsonl").write_bytes(b'{"n": 1}\n{"n": 2}\n')
    watch = Watch([str(tmp_path)], ReadStats(), from_start=True)
    assert len(watched_lines(watch)) == 4
    watch.close()

