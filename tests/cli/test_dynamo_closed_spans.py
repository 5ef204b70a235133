"""Dynamo at INFO level with span events: a request whose `http-request` span logged
`SPAN_CLOSED` ended; it was not cut off by a crash."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.inprocess_cli import run_in_process

# Dynamo's own lines (DYN_LOGGING_JSONL=1, DYN_LOGGING_SPAN_EVENTS=1, INFO): the request's
# span closes after 1.9 s; no `http response sent` line on this route.
REQUEST_ID = "c0ffee00-1111-4222-8333-444455556666"
LINES = [
    {"time": "2026-10-02T14:06:40.001200Z", "level": "WARN",
     "file": "lib/llm/src/http/service/openai.rs", "line": 330,
     "target": "dynamo_llm::http::service::openai",
     "message": "ignoring deprecated client request id header", "header": "request-id",
     "method": "POST", "request_id": REQUEST_ID, "span_id": "f7e487a9d2a6bf38",
     "span_name": "http-request", "trace_id": "80196f3e3a6fdf06d23bb9ada3788518",
     "uri": "/v1/messages", "version": "HTTP/1.1"},
    {"time": "2026-10-02T14:06:41.900311Z", "level": "INFO", "file": "lib/runtime/src/logging.rs",
     "line": 412, "target": "request_span", "message": "SPAN_CLOSED", "method": "POST",
     "request_id": REQUEST_ID, "span_id": "f7e487a9d2a6bf38", "span_name": "http-request",
     "time.busy_us": 18101, "time.duration_us": 1899112, "time.idle_us": 1881011,
     "trace_id": "80196f3e3a6fdf06d23bb9ada3788518", "uri": "/v1/messages",
     "version": "HTTP/1.1"},
]


def _ridtrace(*args: str) -> str:
    code, stdout, stderr = run_in_process(list(args), env={"COLUMNS": "100"})
    assert code == 0, stderr
    return stdout


def _log(tmp_path: Path) -> Path:
    log = tmp_path / "dynamo.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in LINES))
    return log


def test_a_closed_span_gets_no_crash_warning_in_jaeger(tmp_path: Path) -> None:
    # The span was warned "in flight when its process stopped" and drawn as a request a
    # crash cut off, though SPAN_CLOSED says it ended: every request of a Dynamo
    # frontend logging at INFO with span events looked killed.
    out = tmp_path / "traces.json"
    _ridtrace("export", "jaeger", str(_log(tmp_path)), "-o", str(out))
    spans = [s for t in json.loads(out.read_text())["data"] for s in t["spans"]]
    assert len(spans) == 1
    assert spans[0]["warnings"] is None
    assert spans[0]["duration"] == 1899112


def test_a_closed_span_is_not_judged_unanswered_by_trace(tmp_path: Path) -> None:
    doc = json.loads(_ridtrace("trace", REQUEST_ID, str(_log(tmp_path)), "--format", "json"))
    [request] = doc["requests"]
    assert request["verdict"] == "no fingerprints"
    assert request["duration_ms"] == 1899.112
