"""A finding printed after a rotation cites its lines where they are now.

A caller's first line was read from ``frontend.jsonl``; the log was then rotated and the
next holder of the caller's id logged to the new ``frontend.jsonl``. The duplicate is
printed after the rotation, so its evidence must name where the first caller's line is
now, ``frontend.jsonl.1`` (the renamed file, or the copy a copy-and-truncate made):
``frontend.jsonl:1`` is another request's line by then, as ``analyze`` of the same files
afterwards shows.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from ridtrace.forensics.live.follow import Follower, FollowSettings
from tests.forensics.helpers import rt, ts


def _caller(event: str, span: str, seconds: float) -> str:
    return rt(event, time=ts(seconds), request_id="360", trace_id=span * 16, span_id=span,
              path="/v1/chat/completions", status=200, outcome="ok")


def _append(path: Path, *lines: str) -> None:
    with path.open("a") as handle:
        handle.writelines(line + "\n" for line in lines)


def _rotate(log: Path, mode: str) -> Path:
    part = log.with_name(log.name + ".1")
    if mode == "create":  # logrotate's create: rename, then a new file under the name
        os.rename(log, part)
        log.touch()
    else:  # logrotate's copytruncate
        shutil.copyfile(log, part)
        os.truncate(log, 0)
    return part


@pytest.mark.parametrize("mode", ["create", "copytruncate", "copytruncate after the look"])
def test_evidence_read_before_a_rotation_names_the_rotated_part(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "frontend.jsonl"
    _append(log, rt("hello", time=ts(0.0)), _caller("request.start", "a1", 0.5))
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, settle_s=0))
    part = log.with_name(log.name + ".1")

    def rotate_and_write() -> None:
        _rotate(log, mode.split()[0])
        _append(log, _caller("request.start", "b2", 1.0), _caller("request.end", "b2", 1.5))

    try:
        found, _ = follower.poll()
        assert found == []
        if mode.endswith("after the look"):  # between the poll's look for files and its read
            look = follower.watch.discover

            def look_then_rotate() -> None:
                look()
                follower.watch.discover = look  # type: ignore[method-assign]
                rotate_and_write()

            follower.watch.discover = look_then_rotate  # type: ignore[method-assign]
        else:
            rotate_and_write()
        later, _ = follower.poll()
        found = later + follower.finish()
    finally:
        follower.close()
    duplicates = [f for f in found if f["kind"] == "duplicate_in_flight"]
    assert len(duplicates) == 1, found
    evidence = duplicates[0]["evidence"]
    assert evidence[0] == {"file": str(part), "line": 2}  # a1's request.start
    cited = {json.loads(Path(e["file"]).read_text().splitlines()[e["line"] - 1])["span_id"]
             for e in evidence}
    assert cited == {"a1", "b2"}


def _duplicate_after(log: Path, move: str) -> list[dict[str, object]]:
    """The duplicate printed when `log`'s name is given to a new file (`move`) between
    the first caller's line and the second's."""
    follower = Follower([str(log)], FollowSettings(from_start=True, settle_s=0))
    try:
        _append(log, _caller("request.start", "a1", 0.5))
        assert follower.poll()[0] == []
        fresh = log.with_name("fresh.jsonl")
        fresh.touch()
        if move == "link":  # a "current" link pointed at the next file
            log.unlink()
            log.symlink_to(fresh.name)
        else:  # a file moved over the name: the first one has no name left
            os.replace(fresh, log)
        _append(log, _caller("request.start", "b2", 1.0), _caller("request.end", "b2", 1.5))
        found = follower.poll()[0] + follower.finish()
    finally:
        follower.close()
    duplicates = [f for f in found if f["kind"] == "duplicate_in_flight"]
    assert len(duplicates) == 1, found
    return list(duplicates[0]["evidence"])  # type: ignore[call-overload]


def test_evidence_read_through_a_link_names_the_file_it_led_to(tmp_path: Path) -> None:
    # Each caller's line 1 was cited as current.jsonl:1: one evidence entry, the first
    # caller's line not cited at all.
    first = tmp_path / "app-1.log"
    first.touch()
    log = tmp_path / "current.jsonl"
    log.symlink_to(first.name)
    evidence = _duplicate_after(log, "link")
    assert evidence[:2] == [{"file": str(first), "line": 1}, {"file": str(log), "line": 1}]
    cited = {json.loads(Path(str(e["file"])).read_text().splitlines()[int(str(e["line"])) - 1])
             ["span_id"] for e in evidence}
    assert cited == {"a1", "b2"}


def test_evidence_from_a_file_with_no_name_left_says_it_was_removed(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    evidence = _duplicate_after(log, "replace")
    assert evidence[:2] == [{"file": f"{log} (removed)", "line": 1}, {"file": str(log), "line": 1}]


def test_evidence_of_a_log_compressed_away_names_its_compressed_copy(tmp_path: Path) -> None:
    # logrotate without delaycompress, between two polls: the log renamed to .1, a new
    # log created, .1 compressed to .1.gz and removed. The first caller's line is in the
    # .gz; it was cited as "frontend.jsonl (removed)", a file no name leads to.
    import gzip

    log = tmp_path / "frontend.jsonl"
    log.touch()
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, settle_s=0))
    try:
        _append(log, _caller("request.start", "a1", 0.5))
        assert follower.poll()[0] == []
        part = log.with_name(log.name + ".1")
        os.rename(log, part)
        log.touch()
        part.with_name(part.name + ".gz").write_bytes(gzip.compress(part.read_bytes()))
        part.unlink()
        _append(log, _caller("request.start", "b2", 1.0), _caller("request.end", "b2", 1.5))
        found = follower.poll()[0] + follower.finish()
    finally:
        follower.close()
    (duplicate,) = [f for f in found if f["kind"] == "duplicate_in_flight"]
    assert duplicate["evidence"][:2] == [  # type: ignore[index]
        {"file": f"{log}.1.gz", "line": 1}, {"file": str(log), "line": 1}]


@pytest.mark.parametrize("mode", ["create", "copytruncate"])
def test_bad_line_samples_read_before_a_rotation_name_the_rotated_part(
    tmp_path: Path, mode: str,
) -> None:
    # A banner line (stdout before the JSON logger starts) read as a bad line, then the
    # log rotated: the summary's sample still named `frontend.jsonl:1`, by then a valid
    # line of the new file, where `analyze` names `frontend.jsonl.1:1`.
    from click.testing import CliRunner

    from ridtrace.cli.main import main

    log = tmp_path / "frontend.jsonl"
    _append(log, "starting server...", rt("hello", time=ts(0.0)))
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, settle_s=0))
    try:
        follower.poll()
        _rotate(log, mode)
        _append(log, rt("hello", time=ts(1.0)), "server restarted, no JSON yet")
        follower.poll()
        follower.finish()
        samples = follower.summary()["bad_line_samples"]
    finally:
        follower.close()
    got = CliRunner().invoke(main, ["analyze", str(tmp_path), "--format", "json",
                                    "--allow-incomplete"])
    batch = json.loads(got.stdout)["summary"]["bad_line_samples"]
    assert sorted(samples, key=str) == sorted(batch, key=str), (samples, batch)
    assert {"file": str(log) + ".1", "line": 1} in [
        {k: s[k] for k in ("file", "line")} for s in samples]


def test_an_idle_log_rotated_counts_its_empty_copies_as_analyze_does(tmp_path: Path) -> None:
    # logrotate's copytruncate on a log nobody wrote since: the empty log's empty copy is
    # a file the batch read counts; the follow's summary said one file fewer per rotation.
    from click.testing import CliRunner

    from ridtrace.cli.main import main

    log = tmp_path / "app.log"
    _append(log, *(rt("hello", time=ts(k)) for k in range(20)))
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, settle_s=0))
    try:
        follower.poll()
        for _ in range(2):
            older = tmp_path / "app.log.1"
            if older.exists():
                os.rename(older, tmp_path / "app.log.2")
            _rotate(log, "copytruncate")
            follower.poll()
        follower.finish()
        files = follower.summary()["files"]
    finally:
        follower.close()
    got = CliRunner().invoke(main, ["analyze", str(tmp_path), "--format", "json"])
    assert files == json.loads(got.stdout)["summary"]["files"] == 3
