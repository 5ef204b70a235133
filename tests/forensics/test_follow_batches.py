"""The live rules over real parsed batches find what the batch `analyze` report finds.

Synthetic logs with crossed streams, colliding ids and Unlinked errors are read by the
real `Follower` (DuckDB pass, `span_rows`, `LiveRules.feed`), once in whole-file batches
and once in small polls that cut requests across batches and let one file run ahead of
the others, as a live follower sees them. The error findings must be the batch
report's, finding for finding, except the batch rule's lost output (a worker's output
that no caller received: an `unlinked` finding on the worker span), which needs every
caller's delivery and which the live rules do not judge.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ridtrace.forensics.live.follow import Follower, FollowSettings
from ridtrace.forensics.reading.events import load_events
from ridtrace.forensics.rules.report import analyze, report_json
from ridtrace.testing.dynamo import DynamoSpec, write_dynamo_logs
from ridtrace.testing.synth import SynthSpec, write_logs

Key = tuple[str, str, str]
_LOST_OUTPUT = "that no caller received"  # `rules.streams.find_unlinked`'s lost output


def _key(finding: dict[str, object]) -> Key:
    return (str(finding["kind"]), str(finding["span_id"]), str(finding["request_id"]))


def _live(src: Path, max_bytes: int) -> tuple[list[Key], int]:
    follower = Follower([str(src)], FollowSettings(from_start=True, max_bytes=max_bytes))
    found: list[Key] = []
    try:
        follower.start()
        while True:
            batch, more = follower.poll()
            found.extend(_key(f) for f in batch)
            if not more:
                break
        polls = follower.polls
    finally:
        follower.close()
    return found, polls


@pytest.mark.parametrize("max_bytes", [64 << 20, 24 << 10])
def test_live_findings_are_the_batch_reports_error_findings(tmp_path: Path,
                                                            max_bytes: int) -> None:
    write_logs(tmp_path, SynthSpec(requests=600, seed=11, crossed=4, collisions=4,
                                   duplicates=4))
    doc = report_json(analyze(load_events([str(tmp_path)], lean=True)))
    expected = sorted(
        _key(f) for f in doc["findings"]
        if f["severity"] == "error" and not str(f["detail"]).endswith(_LOST_OUTPUT)
    )
    assert {kind for kind, _, _ in expected} == {
        "crossed_stream", "duplicate_in_flight", "unlinked"
    }
    found, polls = _live(tmp_path, max_bytes)
    assert len(found) == len(set(found))  # each reported once
    assert sorted(found) == expected
    assert polls > (20 if max_bytes < 1 << 20 else 0)  # small polls did cut the run


@pytest.mark.parametrize("skew_us", [(), (-30_000, 40_000, 15_000)])
def test_dynamo_logs_with_skewed_workers_give_the_batch_reports_counts(
    tmp_path: Path, skew_us: tuple[int, ...]
) -> None:
    # A worker clock behind puts its spans before their callers' in a poll; a torn
    # first line puts a caller after its worker. Each such caller was counted twice
    # (303 requests read as 404 with these skews).
    write_dynamo_logs(tmp_path, DynamoSpec(requests=300, worker_skew_us=skew_us))
    doc = report_json(analyze(load_events([str(tmp_path)], lean=True)))
    expected = sorted(_key(f) for f in doc["findings"] if f["severity"] == "error")
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, max_bytes=24 << 10))
    found: list[Key] = []
    try:
        follower.run(lambda f: found.append(_key(f)) or True, stop=lambda: True)
        summary = follower.summary()
    finally:
        follower.close()
    assert sorted(found) == expected
    for name in ("requests", "spans", "lines", "bad_lines", "errors"):
        assert summary[name] == doc["summary"][name], name
