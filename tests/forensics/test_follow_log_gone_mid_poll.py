"""A named log removed in the middle of the poll that looks at a new part beside it.

To tell whether a new part (``app.jsonl.1``) holds lines of a log rotated since the last
poll, the watch checks that the log's name still holds the followed file, then whether
that file's first lines are still those it was recognised by (copy-and-truncate). Read
again by its name, a log removed between the two raised FileNotFoundError out of the
poll: the follow ended in a traceback. The followed file is held open: its first lines
are read from it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from ridtrace.forensics.live.parts import Copies
from ridtrace.forensics.live.watch import Watch
from ridtrace.forensics.reading.stats import ReadStats
from tests.forensics.helpers import watched_lines


def test_a_log_removed_between_its_check_and_its_head_is_read_to_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "app.jsonl"
    log.write_bytes(b'{"n": 1}\n')
    watch = Watch([str(log)], ReadStats(), from_start=True)
    assert [n for _, n, _ in watched_lines(watch)] == [1]
    with open(log, "ab") as fh:
        fh.write(b'{"n": 2}\n')  # written after that read: still to be read
    (tmp_path / "app.jsonl.1").write_bytes(b'{"old": 1}\n')  # a new part to judge

    real_stat = Path.stat
    removed: list[Path] = []

    def stat_then_remove(self: Path, **kwargs: Any) -> os.stat_result:
        # The log is removed right after the check found its name holding the followed
        # file: the race, made to happen on every run.
        status = real_stat(self, **kwargs)
        if self == log and sys._getframe(1).f_code is Copies._rotated.__code__:
            os.unlink(log)
            removed.append(log)
        return status

    monkeypatch.setattr(Path, "stat", stat_then_remove)
    lines = watched_lines(watch)
    monkeypatch.undo()
    assert removed == [log]  # the race did happen
    assert ("app.jsonl", 2, b'{"n": 2}') in lines
    assert watched_lines(watch) == []
    assert (watch.stats.bad_lines, watch.stats.unreadable_files) == (0, [])
    assert not watch.tails  # the log lost its name: read to its end, then closed
    watch.close()
