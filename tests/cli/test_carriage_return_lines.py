"""Records separated by carriage returns alone (classic Mac OS line ends, a tool that
rewrote a stretch of a log) inside a file of newline-ended lines.

They are one line to every reader that splits on newlines, and their records cannot be
cited at lines of their own, so the line stays a bad one; but it is one bad line however
many records it holds, far under the 1 % a read may have. An Unlinked error among them
was dropped and the run said "No findings", exit 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ridtrace.forensics.live.follow import Follower, FollowSettings
from tests.cli.helpers import analyze_json
from tests.forensics.helpers import rt, rt_request, ts
from tests.support.extras import ENGINES


def _log_with_cr_run(log: Path) -> None:
    lines = [line for n in range(200) for line in rt_request(f"{n + 1:x}", f"r{n}", n, n + 0.5)]
    ctx = {"request_id": "lost", "trace_id": f"{'abc':0>32}", "span_id": "abc"}
    start, end = rt_request("abc", "lost", 300, 301)
    unlinked = rt("response.unlinked", time=ts(300.5), **ctx)
    # A stretch of the log whose line ends are lone CRs, amid newline-ended lines.
    joined = "\r".join([start, unlinked, end])
    log.write_text("\n".join([*lines[:100], joined, *lines[100:]]) + "\n")


@pytest.mark.parametrize("engine", ENGINES)
def test_records_separated_by_lone_carriage_returns_make_the_read_incomplete(
    tmp_path: Path, engine: str
) -> None:
    log = tmp_path / "frontend.jsonl"
    _log_with_cr_run(log)
    code, doc = analyze_json(str(log), "--engine", engine)
    summary = doc["summary"]
    assert summary["bad_line_samples"] == [{
        "file": str(log), "line": 101,
        "reason": "3 JSON records separated by carriage returns alone, not newlines"}]
    assert [note["file"] for note in summary["unreadable_files"]] == [str(log)]
    assert "tr '\\r' '\\n'" in summary["unreadable_files"][0]["reason"]
    assert summary["incomplete"] and code == 3


def test_the_follower_reads_them_as_incomplete_too(tmp_path: Path) -> None:
    _log_with_cr_run(tmp_path / "frontend.jsonl")
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True))
    follower.start()
    try:
        follower.run(lambda finding: None, stop=lambda: True)
    finally:
        follower.close()
    summary = follower.summary()
    assert summary["bad_lines"] == 1 and summary["incomplete"]
    assert json.dumps(summary["unreadable_files"]).count("carriage returns") == 1
