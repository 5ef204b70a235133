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
from tests.forensics.helpers import rt, ts

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


@pytest.fixture(scope="module")
def synth_logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Key]]:
    """The synthetic logs and the batch report's error findings: the same for both
    batch sizes, so written and analyzed once (the follower only reads them)."""
    src = tmp_path_factory.mktemp("synth")
    write_logs(src, SynthSpec(requests=600, seed=11, crossed=4, collisions=4, duplicates=4))
    doc = report_json(analyze(load_events([str(src)], lean=True)))
    expected = sorted(
        _key(f) for f in doc["findings"]
        if f["severity"] == "error" and not str(f["detail"]).endswith(_LOST_OUTPUT)
    )
    return src, expected


@pytest.mark.parametrize("max_bytes", [64 << 20, 24 << 10])
def test_live_findings_are_the_batch_reports_error_findings(
    synth_logs: tuple[Path, list[Key]], max_bytes: int
) -> None:
    tmp_path, expected = synth_logs
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


def test_a_duplicate_seen_only_in_worker_logs_is_named_as_the_batch_report_names_it(
    tmp_path: Path,
) -> None:
    # The callers' frontend logs are absent: each is known by the worker span that stands
    # for it. The live finding named the callers' span ids, which are in no line read
    # (`trace` finds nothing by them), where the batch report names the worker spans.
    for name, span, parent, start in (("worker-8101.jsonl", "w1", "p1", 0.0),
                                      ("worker-8102.jsonl", "w2", "p2", 0.5)):
        ctx = {"request_id": "10", "trace_id": f"{parent:0>32}", "span_id": span,
               "parent_span_id": parent, "service": name[:-6]}
        (tmp_path / name).write_text("\n".join([
            rt("worker.start", time=ts(start), fp_in=f"in-{span}", **ctx),
            rt("worker.end", time=ts(start + 1), outcome="ok", fp_out=f"out-{span}", **ctx),
        ]) + "\n")
    doc = report_json(analyze(load_events([str(tmp_path)], lean=True)))
    fields = ("kind", "span_id", "request_id", "detail")
    [batch] = [tuple(f[k] for k in fields) for f in doc["findings"]]
    assert batch[1] == "w1"
    live: list[tuple[object, ...]] = []
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True))
    try:
        follower.run(lambda f: live.append(tuple(f[k] for k in fields)) or True,
                     stop=lambda: True)
    finally:
        follower.close()
    assert live == [batch]
