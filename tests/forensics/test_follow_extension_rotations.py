"""logrotate's ``extension`` option keeps a log's extension last: ``app.log`` rotates to
``app-20261203.log`` (with ``dateext``) or ``app.1.log``, compressed ``…log.gz``. The
batch read takes such a file for a part of ``app.log``; the follower knew a copy only by
the name before its first dot, ``app``, so ``app-20261203`` was another log: after a
``copytruncate`` the lines written since its last read were lost (a named log) or the
whole copy read again (a directory), and after a rename and ``compress`` the gzip's lines
were read a second time."""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import pytest

from ridtrace.forensics.live.watch import Watch
from ridtrace.forensics.reading.stats import ReadStats
from tests.forensics.helpers import watched_lines


def _compress(path: Path) -> Path:
    packed = path.with_name(path.name + ".gz")
    packed.write_bytes(gzip.compress(path.read_bytes()))
    path.unlink()
    return packed


@pytest.mark.parametrize("named", [True, False], ids=["named", "directory"])
@pytest.mark.parametrize("rotated", [
    "app-20261203.log", "app.1.log",
    # logrotate's `dateformat -%Y-%m-%d`, with `extension` and without
    "app-2026-12-03.log", "app.log-2026-12-03",
])
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_a_copytruncate_under_the_extension_option_loses_and_repeats_no_line(
    tmp_path: Path, named: bool, rotated: str, compress: bool
) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b'{"n": 1}\n{"n": 2}\n')
    watch = Watch([str(log) if named else str(tmp_path)], ReadStats(), from_start=True)
    assert [n for _, n, _ in watched_lines(watch)] == [1, 2]
    with open(log, "ab") as fh:
        fh.write(b'{"n": 3}\n')  # written after that read: in the copy only, once truncated
    copy = tmp_path / rotated
    shutil.copyfile(log, copy)
    os.truncate(log, 0)
    if compress:
        copy = _compress(copy)
    with open(log, "ab") as fh:
        fh.write(b'{"n": 4}\n')
    assert sorted(watched_lines(watch)) == sorted([(copy.name, 3, b'{"n": 3}'), ("app.log", 1, b'{"n": 4}')])
    assert watched_lines(watch) == []
    watch.close()


def test_a_renamed_log_compressed_under_the_extension_option_is_read_once(
    tmp_path: Path
) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(b'{"n": 1}\n{"n": 2}\n')
    watch = Watch([str(tmp_path)], ReadStats(), from_start=True)
    assert [n for _, n, _ in watched_lines(watch)] == [1, 2]
    with open(log, "ab") as fh:
        fh.write(b'{"n": 3}\n')
    renamed = tmp_path / "app-20261203.log"
    os.rename(log, renamed)
    log.write_bytes(b'{"n": 4}\n')
    read = watched_lines(watch)  # the renamed file, held open, read to its end
    packed = _compress(renamed)
    read += watched_lines(watch)
    assert sorted(text for _, _, text in read) == [b'{"n": 3}', b'{"n": 4}'], read
    assert watched_lines(watch) == []
    assert packed.exists()
    watch.close()
