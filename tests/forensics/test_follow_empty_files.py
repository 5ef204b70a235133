"""`--follow`'s `files` counts the empty files a walk found, as the batch read does, also
once the follow has stopped.

The walks after a stop judged no file, and the empty files the last one had found were
forgotten: an idle worker's empty log, or the empty parts logrotate's copytruncate and
compress leave, made the summary say fewer files than `analyze` of the same folder.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.forensics.live.follow import Follower, FollowSettings
from tests.forensics.helpers import rt_request


def test_the_summary_counts_the_empty_files_the_batch_read_counts(tmp_path: Path) -> None:
    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("a1", "r1", 0, 1)) + "\n")
    (tmp_path / "worker-1.jsonl").write_text("")
    (tmp_path / "worker-1.jsonl.1").write_text("")
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, settle_s=0))
    try:
        follower.poll()
        follower.run(lambda finding: True, stop=lambda: True)
        files = follower.summary()["files"]
    finally:
        follower.close()
    batch = CliRunner().invoke(main, ["analyze", str(tmp_path), "--format", "json", "-q"])
    assert files == json.loads(batch.stdout)["summary"]["files"] == 3
