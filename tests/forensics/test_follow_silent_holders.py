"""`--follow` on ids held by a request whose end never comes, or whose one line is an error.

Two ways live detection parted from `analyze` on logs written as they happen:

* a request whose process was killed (no end line) stayed open to the live rules: once
  its id's duplicate was printed, every later holder of the id joined that printed
  cluster, and a complete duplicate of the id's next holders seconds later, which
  `analyze` reports, was never printed;
* Dynamo's INFO-level `generate` span that failed is one line, `engine generate call
  failed`, and no closing one: left open, it held its id, and the id's next Unlinked
  failure seconds later was printed as a duplicate `analyze` does not report.

The lines are written in stages, a poll after each, on a clock the test moves.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ridtrace.forensics.live.follow import Follower, FollowSettings
from tests.support.lagged_replay import Ticks, batch_errors, key

_T0 = datetime(2026, 12, 6, 7, 0, 0, tzinfo=UTC)


def _at(seconds: float) -> str:
    return (_T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _http(seconds: float, who: str, message: str, **more: Any) -> dict[str, Any]:
    span = {"A": "a1", "B": "b2", "C": "c3", "D": "d4"}[who] * 8
    return {"time": _at(seconds), "level": "INFO", "target": "dynamo_llm::http::service",
            "message": message, "request_id": "dyn-7", "span_id": span,
            "span_name": "http-request", "trace_id": span * 2, "x_request_id": f"client-{who}",
            "uri": "/v1/chat/completions", **more}


def _failed(seconds: float, span: str) -> dict[str, Any]:
    return {"time": _at(seconds), "level": "ERROR", "target": "dynamo_llm::http::service",
            "message": "engine generate call failed",
            "error": "Unlinked response; response task was dropped or cancelled",
            "request_id": "1", "span_id": span * 8, "span_name": "generate",
            "trace_id": span * 16, "x_request_id": "1"}


def _follow_in_stages(folder: Path, stages: list[tuple[float, list[dict[str, Any]]]]
                      ) -> list[tuple[str, str, str]]:
    """Each stage's lines appended at its time (seconds after T0), a poll after each."""
    log = folder / "frontend.jsonl"
    log.write_text("")
    ticks = Ticks()
    follower = Follower([str(folder)], FollowSettings(from_start=True, settle_s=1.0),
                        ticks=ticks, clock=lambda: _T0.timestamp() + ticks.now - 100.0)
    live: list[dict[str, Any]] = []
    try:
        follower.start()
        for at, lines in stages:
            with log.open("a") as out:
                out.writelines(json.dumps(x) + "\n" for x in lines)
            ticks.now = 100.0 + at + 0.5
            live.extend(follower.poll()[0])
            ticks.now += 2.0  # past the settle time: what is proven is printed
            live.extend(follower.poll()[0])
        follower.run(lambda finding: live.append(finding) or True, stop=lambda: True)
    finally:
        follower.close()
    return sorted(key(f) for f in live if f["severity"] == "error")


def test_the_next_duplicate_of_an_id_a_killed_request_held_is_printed(tmp_path: Path) -> None:
    a_received = _http(0.0, "A", "request received")  # A's process dies: no end
    stages = [
        (0.5, [a_received, _http(0.2, "B", "request received"),
               _http(0.7, "B", "http response sent", latency_ms="500", status="200")]),
        (6.0, [_http(5.7, "C", "request received"), _http(5.9, "D", "request received")]),
        (6.5, [_http(6.4, "C", "http response sent", latency_ms="700", status="200"),
               _http(6.4, "D", "http response sent", latency_ms="500", status="200")]),
    ]
    live = _follow_in_stages(tmp_path, stages)
    batch = batch_errors(tmp_path)
    # analyze reports C and D (A's end is not in the logs: its report is incomplete);
    # live reports A and B too, as documented for a request whose end never came.
    assert batch and set(batch) <= set(live), (batch, live)
    assert len([k for k in live if k[0] == "duplicate_in_flight"]) == 2, live


def test_an_unlinked_generate_failure_does_not_hold_its_id(tmp_path: Path) -> None:
    stages = [(0.5, [_failed(0.0, "5c")]), (3.5, [_failed(3.0, "6c")])]
    live = _follow_in_stages(tmp_path, stages)
    assert [k[0] for k in live] == ["unlinked", "unlinked"], live
    assert live == batch_errors(tmp_path)
