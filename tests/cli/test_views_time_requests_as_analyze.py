"""`trace`, `audit` and `export jaeger` make and time requests by the lines `analyze` reads.

`analyze` makes a request, and times it, by its lifecycle lines (ridtrace's events,
Dynamo's known messages). The views took every line under the request's ids: a line an
application logged under a request's ids after its `request.end`, or a Dynamo DEBUG line
after its last known message, ended the request later in `trace` and `export jaeger`,
and `trace` showed a duplicate in flight where `analyze` found none ("No findings").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.cli.helpers import analyze_json
from tests.forensics.helpers import ts


def _ridtrace(at: float, span: str, message: str, **fields: Any) -> dict[str, Any]:
    line = {"time": ts(at), "level": "INFO", "message": message, "schema": "ridtrace/1",
            "service": "frontend", "pid": 1, "request_id": "dup-1", "trace_id": span * 2,
            "span_id": span, "logger": "ridtrace.tracing.middleware", **fields}
    if message.startswith("request."):
        line["event"] = message
    return line


def _dynamo(at: float, span: str, message: str) -> dict[str, Any]:
    return {"time": ts(at), "level": "DEBUG", "target": "dynamo_llm::http::service::metrics",
            "message": message, "request_id": "dup-1", "span_id": span,
            "span_name": "http-request", "trace_id": span * 2, "uri": "/v1/chat/completions"}


A, B = "a" * 16, "b" * 16
# Request A ends at 30 ms; a line under its ids at 60 ms; request B holds the id 50-80 ms.
CASES = {
    "ridtrace-line-after-the-end": [
        _ridtrace(0.00, A, "request.start"),
        _ridtrace(0.03, A, "request.end", status=200, outcome="ok", duration_ms=30.0),
        _ridtrace(0.05, B, "request.start"),
        {**_ridtrace(0.06, A, "background task still running"), "logger": "myapp.handlers"},
        _ridtrace(0.08, B, "request.end", status=200, outcome="ok", duration_ms=30.0),
    ],
    "dynamo-debug-line-after-the-last-known": [
        _dynamo(0.00, A, "request received"),
        _dynamo(0.03, A, "http response sent"),
        _dynamo(0.05, B, "request received"),
        _dynamo(0.06, A, "streaming chunk"),
        _dynamo(0.08, B, "http response sent"),
    ],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_views_end_a_request_where_analyze_does(tmp_path: Path, case: str) -> None:
    (tmp_path / "frontend.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in CASES[case]))
    code, report = analyze_json(str(tmp_path))
    assert report["findings"] == [] and code in (0, 3), report
    traced = CliRunner().invoke(main, ["trace", "dup-1", str(tmp_path), "--format", "json",
                                       "-q"])
    requests = json.loads(traced.stdout)["requests"]
    assert [(r["findings"], r["overlaps"]) for r in requests] == [([], [])] * 2, requests
    exported = CliRunner().invoke(main, ["export", "jaeger", str(tmp_path), "-o",
                                         str(tmp_path / "jaeger.json"), "-q"])
    assert exported.exit_code in (0, 3), exported.stderr
    spans = [span for trace in json.loads((tmp_path / "jaeger.json").read_text())["data"]
             for span in trace["spans"]]
    assert sorted(span["duration"] for span in spans) == [30_000, 30_000]
    # The late line is still shown among its request's lines.
    [late] = [r for r in requests if r["span_id"] == A]
    assert len(late["events"]) == 3
