"""A Dynamo request's deprecated-header WARN on its ``generate`` span is that request's use.

Dynamo opens ``generate`` inside a request's ``http-request`` span; a request is the
outer span, the inner one working for it (docs/cli.md). A WARN on each span was counted
as two requests that sent the header, by `audit` and by `analyze` alike; one on the
inner span alone was counted at an ``(unknown)`` route.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.cli.helpers import analyze_json

_WARN = "ignoring deprecated client request id header"
_BASE = {"trace_id": "ee" * 16, "request_id": "E", "target": "dynamo_llm::http::service::openai"}
_HTTP = {**_BASE, "span_id": "e000000000000001", "span_name": "http-request",
         "uri": "/v1/chat/completions", "method": "POST"}
_GENERATE = {**_BASE, "span_id": "e000000000000002", "span_name": "generate",
             "parent_id": "e000000000000001"}


def _line(at_us: int, level: str, message: str, span: dict[str, Any], **fields: Any) -> str:
    return json.dumps({"time": f"2026-10-02T14:00:00.{at_us:06d}Z", "level": level,
                       "message": message, **fields, **span})


@pytest.mark.parametrize("warned_on", [("outer", "inner"), ("inner",)],
                         ids=["both spans", "inner span only"])
def test_a_warn_on_the_generate_span_is_its_requests_one_use(
    tmp_path: Path, warned_on: tuple[str, ...],
) -> None:
    lines = []
    if "outer" in warned_on:
        lines.append(_line(0, "WARN", _WARN, _HTTP, header="x-dynamo-request-id"))
    lines.append(_line(10, "DEBUG", "request received", _HTTP))
    if "inner" in warned_on:
        lines.append(_line(100, "WARN", _WARN, _GENERATE, header="x-dynamo-request-id"))
    lines.append(_line(500, "INFO", "http response sent", _HTTP, latency_ms="1", status="200"))
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")

    done = CliRunner().invoke(main, ["audit", str(tmp_path), "--by", "route",
                                     "--format", "json", "-q"])
    rows = [(row["header"], row["route"], row["requests"])
            for row in json.loads(done.stdout)["rows"]]
    assert (done.exit_code, rows) == (0, [("x-dynamo-request-id", "/v1/chat/completions", 1)])
    code, report = analyze_json(str(tmp_path))
    summary = report["summary"]
    assert (code, summary["requests"], summary["deprecated_header"]) == (0, 1, 1)
    (finding,) = [f for f in report["findings"] if f["kind"] == "deprecated_header"]
    assert finding["request_id"] == "E"
