"""Followed files the follower may not read: listed, so the run is incomplete, and
read from their first line once they can be."""

from __future__ import annotations

from pathlib import Path

from tests.forensics.helpers import rt, rt_request
from tests.support.follower import start_follower
from tests.support.unprivileged import unprivileged_prefix

_AS_USER = unprivileged_prefix("a read")


def _unlinked_log(path: Path, span: str) -> None:
    lines = [*rt_request(span, span, 0, 2),
             rt("response.unlinked", request_id=span, span_id=span, trace_id=f"{span:0>32}")]
    path.write_text("".join(line + "\n" for line in lines))


def test_walked_files_it_may_not_read_make_the_run_incomplete(
    tmp_path: Path) -> None:
    # A worker's log the follower's user may not open, and a link named like a log whose
    # target is gone: both were skipped without a word, "clean" and exit 0.
    _unlinked_log(tmp_path / "frontend.jsonl", "a")
    _unlinked_log(tmp_path / "worker.jsonl", "b")
    (tmp_path / "worker.jsonl").chmod(0)
    (tmp_path / "worker-2.log").symlink_to(tmp_path / "gone" / "0.log")
    follower = start_follower([str(tmp_path)], "--from-start", runner=_AS_USER)
    try:
        follower.wait_for(lambda: len(follower.findings()) == 1, timeout=30, what="a finding")
    finally:
        code = follower.stop()
    summary = follower.summary()
    assert {n["file"]: n["reason"] for n in summary["unreadable_files"]} == {
        str(tmp_path / "worker.jsonl"): "cannot read it: Permission denied",
        str(tmp_path / "worker-2.log"): "a broken symbolic link",
    }
    assert summary["incomplete"] is True
    assert code == 1  # the frontend's Unlinked error


def test_a_file_readable_later_is_read_from_its_first_line(
    tmp_path: Path) -> None:
    worker = tmp_path / "worker.jsonl"
    _unlinked_log(worker, "b")
    worker.chmod(0)
    (tmp_path / "worker-2.log").symlink_to(tmp_path / "pods" / "0.log")
    follower = start_follower([str(tmp_path)], "--from-start", runner=_AS_USER)
    # Both were looked at (and listed) before the follower said it was following.
    try:
        worker.chmod(0o644)
        (tmp_path / "pods").mkdir()
        _unlinked_log(tmp_path / "pods" / "0.log", "c")
        follower.wait_for(lambda: len(follower.findings()) == 2, timeout=30,
                          what="two findings")
    finally:
        code = follower.stop()
    summary = follower.summary()
    assert summary["unreadable_files"] == [] and summary["incomplete"] is False, summary
    assert sorted(p.json()["span_id"] for p in follower.findings()) == ["b", "c"]
    assert code == 1


def test_a_folder_listable_later_is_no_longer_unreadable(tmp_path: Path) -> None:
    # A folder the follower could not list was listed for good: once it could, its
    # files were read from their first line, and the summary still said incomplete
    # (exit 3) for a read that was whole.
    locked = tmp_path / "pods"
    locked.mkdir()
    _unlinked_log(locked / "0.log", "c")
    locked.chmod(0)
    follower = start_follower([str(tmp_path)], "--from-start", runner=_AS_USER)
    try:
        locked.chmod(0o755)
        follower.wait_for(lambda: len(follower.findings()) == 1, timeout=30,
                          what="the folder's finding")
    finally:
        code = follower.stop()
        locked.chmod(0o755)
    summary = follower.summary()
    assert summary["unreadable_files"] == [] and summary["incomplete"] is False, summary
    assert code == 1  # its Unlinked error
