"""A request that sent both deprecated headers is counted under each.

Its span row kept one pick: the list its own line gives, else the first WARN's header.
Dynamo logs a WARN for each header a request sent (and a release before the fix names
x-dynamo-request-id on every line of the span besides), so a request that also sent
request-id was counted under x-dynamo-request-id alone: `audit` showed 40 requests
with request-id where 81 sent it, and `analyze`'s finding named one header.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.cli.helpers import analyze_json
from tests.forensics.helpers import rt_at_us
from tests.support.extras import ENGINES

_SPAN = {"method": "POST", "request_id": "c0ffee00-1111-4222-8333-444455556666",
         "span_id": "f7e487a9d2a6bf38", "span_name": "http-request",
         "trace_id": "80196f3e3a6fdf06d23bb9ada3788518", "uri": "/v1/messages"}


def _dynamo(at: str, level: str, message: str, **fields: Any) -> str:
    return json.dumps({"time": f"2026-10-02T14:06:{at}Z", "level": level,
                       "target": "dynamo_llm::http::service::openai", "message": message,
                       **fields, **_SPAN})


_LOGS = {
    "dynamo": [
        _dynamo("40.001200", "WARN", "ignoring deprecated client request id header",
                header="x-dynamo-request-id"),
        _dynamo("40.001300", "WARN", "ignoring deprecated client request id header",
                header="request-id"),
        _dynamo("41.900311", "INFO", "http response sent", latency_ms="1899", status="200"),
    ],
    # HTTP's header names have no case: an upper-case spelling was counted only when
    # its WARN was the request's first.
    "dynamo in upper case": [
        _dynamo("40.001200", "WARN", "ignoring deprecated client request id header",
                header="Request-Id"),
        _dynamo("40.001300", "WARN", "ignoring deprecated client request id header",
                header="X-Dynamo-Request-Id"),
        _dynamo("41.900311", "INFO", "http response sent", latency_ms="1899", status="200"),
    ],
    "dynamo before the fix": [
        _dynamo("40.001200", "DEBUG", "request received", x_dynamo_request_id="abc"),
        _dynamo("40.001300", "WARN", "request-id header is deprecated (DEP #7812)",
                x_dynamo_request_id="abc"),
        _dynamo("41.900311", "INFO", "http response sent", latency_ms="1899", status="200",
                x_dynamo_request_id="abc"),
    ],
    "ridtrace lists": [
        rt_at_us(0, "request.start", "frontend", request_id="r1", trace_id="1" * 32,
                 span_id="1" * 16, deprecated_headers="request-id"),
        rt_at_us(1000, "request.end", "frontend", request_id="r1", trace_id="1" * 32,
                 span_id="1" * 16, status=200, outcome="ok",
                 deprecated_headers="request-id,x-dynamo-request-id"),
    ],
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", list(_LOGS))
def test_both_headers_of_one_request_are_counted(tmp_path: Path, case: str, engine: str) -> None:
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(_LOGS[case]) + "\n")
    _, doc = analyze_json(str(log), "--engine", engine)
    (finding,) = [f for f in doc["findings"] if f["kind"] == "deprecated_header"]
    sent = set(finding["detail"].removeprefix("sent deprecated header ").split(","))
    assert sent == {"request-id", "x-dynamo-request-id"}
    result = CliRunner().invoke(main, ["audit", str(log), "--format", "json", "-q",
                                       "--engine", engine])
    rows = {row["header"]: row["requests"] for row in json.loads(result.stdout)["rows"]}
    assert rows == {"request-id": 1, "x-dynamo-request-id": 1}


def test_the_audit_counts_a_header_once_a_request_whatever_its_case(tmp_path: Path) -> None:
    # "request-id,request-id" counted its request twice, "X-Dynamo-Request-Id" was a
    # header of its own beside "x-dynamo-request-id", and "" a header.
    lines = [
        rt_at_us(n * 1000, "request.start", "frontend", request_id=f"r{n}",
                 trace_id=f"{n + 1:032x}", span_id=f"{n + 1:016x}", deprecated_headers=listed)
        for n, listed in enumerate(["request-id,request-id", "X-Dynamo-Request-Id",
                                    "x-dynamo-request-id", "request-id, ,"])
    ]
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(main, ["audit", str(log), "--format", "json", "-q",
                                       "--allow-incomplete"])
    rows = {row["header"]: row["requests"] for row in json.loads(result.stdout)["rows"]}
    assert rows == {"request-id": 2, "x-dynamo-request-id": 2}
