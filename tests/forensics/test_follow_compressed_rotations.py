"""Lines read from a log that a rotation compressed are cited where they are after the next.

logrotate's ``compress`` (no ``delaycompress``) moves the log's lines into
``frontend.jsonl.1.gz``; the next rotation renames that to ``frontend.jsonl.2.gz`` and
makes a new ``.1.gz``. A duplicate printed after it cited the first caller's line as
``frontend.jsonl.1.gz:2``, another file's line by then (``analyze`` of the same files
cites ``.2.gz:2``), and the summary's bad-line sample named ``.1.gz`` too. With
``rotate 1`` the old ``.1.gz`` is removed first: its lines are nowhere any more, and the
new ``.1.gz`` (perhaps under the removed one's inode number) holds other lines.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from ridtrace.forensics.live.follow import Follower, FollowSettings
from tests.forensics.helpers import rt, ts
from tests.forensics.test_follow_rotated_evidence import _append, _caller


def _rotate_compressed(log: Path, mode: str, keep: int) -> None:
    """One rotation: the numbered copies shifted (or, keeping one, removed), the log's
    lines into ``.1.gz``."""
    one, gz1, gz2 = (log.with_name(log.name + suffix) for suffix in (".1", ".1.gz", ".2.gz"))
    if gz1.exists():
        if keep == 1:
            gz1.unlink()
        else:
            os.rename(gz1, gz2)
    if mode == "create":
        os.rename(log, one)
        log.touch()
    else:
        shutil.copyfile(log, one)
        os.truncate(log, 0)
    gz1.write_bytes(gzip.compress(one.read_bytes()))
    one.unlink()


def _second_holder(follower: Follower, log: Path) -> tuple[dict[str, Any], list[tuple[str, int]]]:
    """A second holder of a1's id written to `log` and the follow ended: the duplicate's
    first evidence line (a1's) and the bad-line samples."""
    _append(log, _caller("request.start", "b2", 1.0), _caller("request.end", "b2", 1.5))
    found = follower.poll()[0] + follower.finish()
    (duplicate,) = [f for f in found if f["kind"] == "duplicate_in_flight"]
    return duplicate["evidence"][0], [(s.file, s.line) for s in follower.stats.samples]


@pytest.mark.parametrize("keep", [2, 1], ids=["rotate-2", "rotate-1"])
@pytest.mark.parametrize("mode", ["create", "copytruncate"])
def test_a_compressed_copys_lines_are_cited_under_its_next_name(
    tmp_path: Path, mode: str, keep: int
) -> None:
    log = tmp_path / "frontend.jsonl"
    _append(log, rt("hello", time=ts(0.0)), _caller("request.start", "a1", 0.5), "not json")
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, settle_s=0))
    try:
        assert follower.poll()[0] == []
        _rotate_compressed(log, mode, keep)
        _append(log, rt("hello", time=ts(0.6)))
        assert follower.poll()[0] == []
        _rotate_compressed(log, mode, keep)
        first, samples = _second_holder(follower, log)
    finally:
        follower.close()
    oldest = str(tmp_path / "frontend.jsonl.2.gz")
    if keep == 1:
        oldest = str(tmp_path / "frontend.jsonl.1.gz (removed)")
    assert first == {"file": oldest, "line": 2}
    assert samples == [(oldest, 3)]
    if keep == 2:
        cited = gzip.decompress(Path(oldest).read_bytes()).decode().splitlines()[1]
        assert json.loads(cited)["span_id"] == "a1"


def test_a_copy_compressed_after_the_follower_saw_it_is_cited_under_its_compressed_name(
    tmp_path: Path,
) -> None:
    # copytruncate, then a compress that takes seconds: a poll sees the plain copy
    # (`.1`) before gzip replaces it with `.1.gz`. The lines read from the log were
    # cited as `frontend.jsonl.1 (removed)`, though `.1.gz` beside it holds them (and
    # `analyze` afterwards cites it).
    log = tmp_path / "frontend.jsonl"
    one, gz1 = log.with_name(log.name + ".1"), log.with_name(log.name + ".1.gz")
    _append(log, rt("hello", time=ts(0.0)), _caller("request.start", "a1", 0.5), "not json")
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, settle_s=0))
    try:
        assert follower.poll()[0] == []
        shutil.copyfile(log, one)
        os.truncate(log, 0)
        assert follower.poll()[0] == []
        gz1.write_bytes(gzip.compress(one.read_bytes()))
        one.unlink()
        assert follower.poll()[0] == []
        first, samples = _second_holder(follower, log)
    finally:
        follower.close()
    assert first == {"file": str(gz1), "line": 2}
    assert samples == [(str(gz1), 3)]


def _copy_and_truncate(log: Path, keep: int) -> None:
    """logrotate's ``copytruncate`` without ``compress``: the oldest copy removed, the
    others shifted, the log copied to ``.1`` and truncated."""
    copies = [log.with_name(f"{log.name}.{n}") for n in range(1, keep + 1)]
    if copies[-1].exists():
        copies[-1].unlink()
    for older, newer in zip(reversed(copies[1:]), reversed(copies[:-1]), strict=True):
        if newer.exists():
            os.rename(newer, older)
    shutil.copyfile(log, copies[0])
    os.truncate(log, 0)


def test_a_plain_copy_renamed_as_the_oldest_is_removed_keeps_its_citations(
    tmp_path: Path,
) -> None:
    # One rotation removed `.2` and renamed `.1` to `.2`: the lines read from the
    # renamed copy were cited as `frontend.jsonl.2 (removed)`, though `.2` held them
    # (the removed copy's rename was applied twice, the second time after the move).
    log = tmp_path / "frontend.jsonl"
    _append(log, rt("hello", time=ts(0.0)))
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, settle_s=0))
    try:
        assert follower.poll()[0] == []
        _copy_and_truncate(log, keep=2)
        _append(log, rt("hello", time=ts(0.2)), _caller("request.start", "a1", 0.5), "not json")
        assert follower.poll()[0] == []
        for moment in (0.6, 0.7):
            _copy_and_truncate(log, keep=2)
            _append(log, rt("hello", time=ts(moment)))
            assert follower.poll()[0] == []
        first, samples = _second_holder(follower, log)
    finally:
        follower.close()
    # a1's lines went .1 (second rotation) and .2 (third): there they are, by then.
    where = str(tmp_path / "frontend.jsonl.2")
    assert "a1" in (tmp_path / "frontend.jsonl.2").read_text().splitlines()[1]
    assert first == {"file": where, "line": 2}
    assert samples == [(where, 3)]
