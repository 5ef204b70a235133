"""A Dynamo request whose lines are in two files (a rotation while it was in flight): its
evidence cites its first line as its first and its answer as its last.

Dynamo's ``http response sent`` states the request's ``latency_ms``, measured from its
arrival, before its ``request received`` line was written. A part holding only the
request's later lines (the live log, after a rotation in flight) so started as early
as the part holding its first line, or earlier, and taken first it made the closing
line the request's first and its ``request received`` its last, in a walk over
logrotate's ``frontend.jsonl.1`` too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import analyze_json
from tests.forensics.helpers import ts
from tests.support.follower import start_follower

_FRONTEND = {"method": "POST", "span_name": "http-request", "uri": "/v1/chat/completions",
             "version": "HTTP/1.1"}


def _dynamo(at: float, message: str, span: str, **fields: Any) -> str:
    line = {"time": ts(at), "level": "DEBUG", "target": "dynamo_llm::http::service::metrics",
            "message": message, "request_id": "1", "x_request_id": "1", "span_id": span,
            "trace_id": span * 2, **_FRONTEND, **fields}
    return json.dumps(line)


def _request(span: str, start: float, end: float) -> list[str]:
    """One pre-fix request keyed by the client's id ``1``: its received line 2 ms after
    it arrived, as ``latency_ms`` counts from the arrival."""
    latency = round((end - start) * 1000) + 2
    return [
        _dynamo(start, "request received", span),
        _dynamo(end - 0.001, "request completed", span, status="success"),
        _dynamo(end, "http response sent", span, status="200", latency_ms=str(latency)),
    ]


def _split_logs(tmp_path: Path, order: str) -> tuple[Path, list[Path]]:
    """The rotated part holding the first caller's first line, and the inputs to name."""
    first, second = _request("a" * 16, 0.0, 0.4), _request("b" * 16, 0.1, 0.2)
    # The log rotated once the first caller's request received was written: its other
    # lines, and the second caller's, are in the live log. Named, the rotated part has a
    # name of its own, so only the lines' times can put it first.
    before = tmp_path / ("frontend.jsonl.1" if order == "directory"
                         else "frontend-before-upgrade.jsonl")
    live = tmp_path / "frontend.jsonl"
    before.write_text(first[0] + "\n")
    live.write_text("\n".join([second[0], *second[1:], *first[1:]]) + "\n")
    named = {"directory": [tmp_path], "oldest first": [before, live],
             "newest first": [live, before]}[order]
    return before, named


ORDERS = ["directory", "oldest first", "newest first"]


@pytest.mark.parametrize("order", ORDERS)
def test_a_request_split_by_a_rotation_cites_its_own_first_and_last_lines(
    tmp_path: Path, order: str
) -> None:
    before, named = _split_logs(tmp_path, order)

    code, doc = analyze_json(*map(str, named))

    assert code == 1
    [finding] = [f for f in doc["findings"] if f["kind"] == "duplicate_in_flight"]
    cited = [(Path(e["file"]).name, e["line"]) for e in finding["evidence"]]
    # Each caller's own first and last line: the first caller's received is in the
    # rotated part, its answer the live log's last line.
    assert cited == [(before.name, 1), ("frontend.jsonl", 5),
                     ("frontend.jsonl", 1), ("frontend.jsonl", 3)]
    # The request still starts when it arrived, as its latency_ms says.
    assert finding["time"] == "2026-11-29T09:59:59.998000Z"


@pytest.mark.parametrize("order", ORDERS)
def test_the_follower_cites_the_lines_analyze_cites(tmp_path: Path, order: str) -> None:
    _, named = _split_logs(tmp_path, order)
    _, doc = analyze_json(*map(str, named))
    [batch] = [f for f in doc["findings"] if f["kind"] == "duplicate_in_flight"]

    follower = start_follower([str(p) for p in named], "--from-start")
    follower.wait_for(lambda: bool(follower.findings()), timeout=60, what="the duplicate")
    assert follower.stop() == 1

    [live] = [p.json() for p in follower.findings()]
    assert (live["kind"], live["time"]) == ("duplicate_in_flight", batch["time"])
    assert live["evidence"] == batch["evidence"]
