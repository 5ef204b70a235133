"""`--follow`'s `files` counts the files a batch read of the folder counts.

The walks after a stop judged no file, and the empty files the last one had found were
forgotten: an idle worker's empty log, or the empty parts logrotate's copytruncate and
compress leave, made the summary say fewer files than `analyze` of the same folder. And
a file removed before the follow read a line of it was counted.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.forensics.live.follow import Follower, FollowSettings
from tests.forensics.helpers import rt_request


def _files_counted(folder: Path, *, from_start: bool,
                   meanwhile: Callable[[], None] = lambda: None) -> tuple[int, int]:
    """`files` of a follow of `folder` (`meanwhile` done between its first two polls,
    then stopped), and of `analyze` of the folder then."""
    follower = Follower([str(folder)], FollowSettings(from_start=from_start, settle_s=0))
    try:
        follower.poll()
        meanwhile()
        follower.poll()
        follower.run(lambda finding: True, stop=lambda: True)
        files = follower.summary()["files"]
    finally:
        follower.close()
    batch = CliRunner().invoke(main, ["analyze", str(folder), "--format", "json", "-q"])
    return files, json.loads(batch.stdout)["summary"]["files"]


def test_the_summary_counts_the_empty_files_the_batch_read_counts(tmp_path: Path) -> None:
    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("a1", "r1", 0, 1)) + "\n")
    (tmp_path / "worker-1.jsonl").write_text("")
    (tmp_path / "worker-1.jsonl.1").write_text("")
    assert _files_counted(tmp_path, from_start=True) == (3, 3)


def test_a_file_removed_before_a_line_of_it_was_read_is_not_counted(tmp_path: Path) -> None:
    # A follow from the end over a folder a demo then runs again in: the old logs are
    # removed unread, new ones written under new names. `files` said 6 where `analyze`
    # of the folder says 3.
    old = tmp_path / "frontend-old.jsonl"
    old.write_text("\n".join(rt_request("a1", "r1", 0, 1)) + "\n")

    def run_again() -> None:
        old.unlink()
        (tmp_path / "frontend-new.jsonl").write_text(
            "\n".join(rt_request("b2", "r2", 2, 3)) + "\n")

    assert _files_counted(tmp_path, from_start=False, meanwhile=run_again) == (1, 1)


def _quiet_follow(folder: Path, *, from_start: bool) -> dict[str, Any]:
    """The summary of a follow of `folder` stopped after its first poll."""
    follower = Follower([str(folder)], FollowSettings(from_start=from_start, settle_s=0))
    try:
        follower.poll()
        follower.run(lambda finding: True, stop=lambda: True)
        return follower.summary()
    finally:
        follower.close()


def test_a_quiet_follow_beside_a_file_that_is_no_log_is_complete(tmp_path: Path) -> None:
    # A follow from the end that read no new line, over a log and a README (or the
    # follower's own output kept beside the logs, as docs/cli.md shows): "no log line
    # was read: the 1 file(s) found were ignored as no logs", exit 3, of a log followed
    # the whole time.
    (tmp_path / "app.jsonl").write_text("\n".join(rt_request("a1", "r1", 0, 1)) + "\n")
    (tmp_path / "README.txt").write_text("how these logs are kept\n")
    summary = _quiet_follow(tmp_path, from_start=False)
    assert summary["files"] == 1 and summary["lines"] == 0
    assert [n["file"] for n in summary["ignored_files"]] == [str(tmp_path / "README.txt")]
    assert not summary["incomplete"], summary["incomplete_reasons"]


def test_a_quiet_follow_beside_a_capture_judged_by_its_start_is_incomplete(
    tmp_path: Path,
) -> None:
    # The follow looks at a walked file's first 64 KiB: a capture whose JSON lines come
    # later is ignored by its start, and a follow that read no line beside it may have
    # missed every request (its other log empty): incomplete, as the batch read says.
    (tmp_path / "frontend.jsonl").write_text("")
    banner = "".join(f"INFO loading shard {n}/4000 [00:01<00:00]\n" for n in range(4000))
    (tmp_path / "capture.txt").write_text(
        banner + "\n".join(rt_request("a1", "r1", 0, 1)) + "\n")
    summary = _quiet_follow(tmp_path, from_start=True)
    assert summary["lines"] == 0, summary
    assert summary["incomplete"], summary
