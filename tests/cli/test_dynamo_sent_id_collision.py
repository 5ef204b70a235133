"""Two chat requests that sent one ``x-dynamo-request-id`` to a Dynamo release before the
fix were a duplicate in flight.

Such a release took the header's value (a UUID) as the request's internal id, and names
it on each line of the request's ``http-request`` span as ``x_dynamo_request_id``; at
its default INFO level no line names a ``request_id``. The seed's chat-route collision
(two callers, one header value, one ``Unlinked request``) was reported as the Unlinked
error alone: the two requests held no id the duplicate rule could see.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ridtrace.contract import UNLINKED_REQUEST
from tests.cli.helpers import analyze_json
from tests.forensics.helpers import follow_as_written, ts

_SENT = "9b2e4c1a-7d3f-4e8a-b1c2-5f6a7b8c9d0e"


def _line(at: float, message: str, span: str, **fields: Any) -> str:
    return json.dumps({
        "time": ts(at), "level": "INFO", "target": "dynamo_llm::http::service::service_v2",
        "message": message, "method": "POST", "span_id": span, "span_name": "http-request",
        "trace_id": span * 2, "uri": "/v1/chat/completions", "version": "HTTP/1.1",
        "x_dynamo_request_id": _SENT, **fields})


def _lines(*, second_sent: str = _SENT) -> list[str]:
    first, second = "a" * 16, "b" * 16
    return [
        _line(0.0, "SPAN_FIRST_ENTRY", first),
        _line(0.1, "SPAN_FIRST_ENTRY", second, x_dynamo_request_id=second_sent),
        _line(0.8, f"Internal server error: Failed to generate completions: {UNLINKED_REQUEST}",
              first, level="ERROR"),
        _line(0.801, "http response sent", first, status="500", latency_ms="801"),
        _line(1.4, "http response sent", second, status="200", latency_ms="1300",
              x_dynamo_request_id=second_sent),
    ]


def test_two_requests_that_sent_one_header_value_held_one_id(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(_lines()) + "\n")

    code, doc = analyze_json(str(log))

    assert code == 1
    found = {(f["kind"], f["request_id"]) for f in doc["findings"]}
    assert ("duplicate_in_flight", _SENT) in found
    assert ("unlinked", _SENT) in found


def test_different_header_values_are_different_ids(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(_lines(second_sent="5c3d5e1a-0b7e-4b8f-9d2a-7f1e2d3c4b5a")) + "\n")

    code, doc = analyze_json(str(log))

    assert code == 1
    assert "duplicate_in_flight" not in {f["kind"] for f in doc["findings"]}


def test_the_follower_sees_the_duplicate_too(tmp_path: Path) -> None:
    found = follow_as_written(tmp_path, [(0.0, "frontend.jsonl", line) for line in _lines()])

    assert ("duplicate_in_flight", _SENT) in {(f["kind"], f["request_id"]) for f in found}
