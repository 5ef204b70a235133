"""An Unlinked request whose lines a copy-and-truncate split: `--follow` prints what
`analyze` reports afterwards.

A caller's `request.start` and first Unlinked line were written just before a
copy-and-truncate (they are in the copy, unread); its second Unlinked line and its
`request.end`, stating a 25 ms duration, in the truncated log. The end line's piece,
dated back by that duration, went to the rules first: the finding printed named the
second Unlinked message, its line and a start before the request's, where the batch
report names the first. When the truncation came between the poll's look for files
and its read, the copy was read a poll later still.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.forensics.live.follow import Follower, FollowSettings
from tests.forensics.helpers import rt, ts

_IDS = {"trace_id": "ab" * 16, "span_id": "cd" * 8, "x_request_id": "dupe"}


def _append(path: Path, *lines: str) -> None:
    with path.open("a") as handle:
        handle.writelines(line + "\n" for line in lines)


def _copy_and_truncate(log: Path) -> None:
    shutil.copyfile(log, log.with_name(log.name + ".1"))
    log.write_bytes(b"")


def _after_rotation(log: Path) -> None:
    _append(log,
            rt("response.unlinked", time=ts(1.003), request_id="dupe", level="ERROR",
               message="Unlinked request; initiating request task was dropped or cancelled",
               **_IDS),
            rt("request.end", time=ts(1.004), request_id="dupe", status=500, outcome="error",
               duration_ms=25.0, **_IDS))


@pytest.mark.parametrize("when", ["before the look", "between the look and the read"])
def test_the_finding_printed_is_the_one_analyze_reports(tmp_path: Path, when: str) -> None:
    log = tmp_path / "app.jsonl"
    _append(log, rt("request.start", time=ts(0.5), request_id="other", trace_id="1" * 32,
                    span_id="2" * 16))
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, settle_s=0))
    try:
        assert follower.poll()[0] == []
        _append(log,
                rt("request.start", time=ts(1.0), request_id="minted-1", **_IDS),
                rt("response.unlinked", time=ts(1.001), request_id="dupe", level="ERROR",
                   message="Unlinked response; response task was dropped or cancelled", **_IDS))
        if when == "before the look":
            _copy_and_truncate(log)
            _after_rotation(log)
        else:  # the rotation lands after the poll has looked for new files
            look = follower.watch.discover

            def look_then_rotate() -> None:
                look()
                follower.watch.discover = look  # type: ignore[method-assign]
                _copy_and_truncate(log)
                _after_rotation(log)

            follower.watch.discover = look_then_rotate  # type: ignore[method-assign]
        found = follower.poll()[0] + follower.poll()[0] + follower.finish()
    finally:
        follower.close()
    got = CliRunner().invoke(main, ["analyze", str(tmp_path), "--format", "json"])
    assert got.exit_code == 1, got.output
    batch: list[dict[str, Any]] = json.loads(got.output)["findings"]
    unlinked = [f for f in batch if f["kind"] == "unlinked"]
    assert len(unlinked) == 1 and unlinked[0]["detail"].startswith("Unlinked response")
    assert [json.loads(json.dumps(f)) for f in found if f["kind"] == "unlinked"] == unlinked
