"""A log that has not appeared yet may still hold lines older than what the others show.

A service creates its log when it first flushes it (Python's ``delay=True``, a
service started after the follower): until then the follower knows no such file. A
duplicate seen in two workers' logs was named after the worker spans, their callers
taken as absent because every file *known* was read past the workers' starts, while
the frontend, within the settle time, had yet to flush the callers' lines: ``analyze``
of the same logs names the first caller.
"""

from __future__ import annotations

import json
from pathlib import Path

from ridtrace.forensics.live.follow import Follower, FollowSettings
from ridtrace.forensics.reading.events import load_events
from ridtrace.forensics.rules.report import analyze, report_json
from tests.forensics.helpers import rt, rt_request, ts

Key = tuple[str, str, str]
_LOST_OUTPUT = "that no caller received"  # judged by the batch `analyze` only


class Ticks:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _key(finding: dict[str, object]) -> Key:
    return (str(finding["kind"]), str(finding["span_id"]), str(finding["request_id"]))


def _workers(directory: Path) -> None:
    """Callers a1 and b2 held id 3 at once; each worker logged its span."""
    for name, span, caller, start, end in (("worker-1.jsonl", "w1", "a1", 0.1, 0.5),
                                           ("worker-2.jsonl", "w2", "b2", 0.2, 0.6)):
        ctx = {"request_id": "3", "trace_id": f"{caller:0>32}", "span_id": span,
               "parent_span_id": caller, "service": name[:-6]}
        (directory / name).write_text(
            rt("worker.start", time=ts(start), fp_in=f"in-{span}", **ctx) + "\n"
            + rt("worker.end", time=ts(end), outcome="ok", fp_out=f"out-{span}", **ctx) + "\n")


def _follow(directory: Path, frontend: list[str] | None) -> list[Key]:
    """Poll the workers' logs alone, then (within the settle time) the frontend's log
    appears holding `frontend`; then polls until well past the settle time."""
    ticks = Ticks()
    follower = Follower([str(directory)], FollowSettings(from_start=True), ticks=ticks)
    found: list[Key] = []
    try:
        follower.start()
        found.extend(map(_key, follower.poll()[0]))
        ticks.now += 0.5
        if frontend is not None:
            (directory / "frontend.jsonl").write_text("".join(line + "\n" for line in frontend))
        found.extend(map(_key, follower.poll()[0]))
        ticks.now += 0.6
        found.extend(map(_key, follower.poll()[0]))
        ticks.now += 5.0
        found.extend(map(_key, follower.poll()[0]))
        found.extend(map(_key, follower.finish()))
    finally:
        follower.close()
    return found


def _batch(directory: Path) -> list[Key]:
    doc = report_json(analyze(load_events([str(directory)], lean=True)))
    return [_key(f) for f in doc["findings"]
            if f["severity"] == "error" and not str(f["detail"]).endswith(_LOST_OUTPUT)]


def test_callers_in_a_log_not_flushed_yet_are_named_as_analyze_names_them(
    tmp_path: Path,
) -> None:
    _workers(tmp_path)
    frontend = sorted([*rt_request("a1", "3", 0.0, 0.7, fp_in="in-w1", fp_out="out-w1"),
                       *rt_request("b2", "3", 0.15, 0.8, fp_in="in-w2", fp_out="out-w2")],
                      key=lambda line: json.loads(line)["time"])
    found = _follow(tmp_path, frontend)
    assert _batch(tmp_path) == [("duplicate_in_flight", "a1", "3")]
    assert found == [("duplicate_in_flight", "a1", "3")]


def test_callers_whose_log_never_comes_are_named_by_their_worker_spans(
    tmp_path: Path,
) -> None:
    _workers(tmp_path)
    found = _follow(tmp_path, None)
    assert _batch(tmp_path) == [("duplicate_in_flight", "w1", "3")]
    assert found == [("duplicate_in_flight", "w1", "3")]
