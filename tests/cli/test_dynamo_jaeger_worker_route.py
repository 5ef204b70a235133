"""`export jaeger` and `trace` name the spans of a Dynamo request: its worker's span after
the route of the request it worked for, through the ``generate`` span between them; the
``generate`` span itself as Dynamo logged it.

Dynamo's worker ``handle_payload`` span is a child of the frontend's ``generate`` span
(which logs no route), itself inside the ``http-request`` span that holds the route. The
worker span was named ``worker request``, the name the docs give a worker whose caller
is not in the file, though its caller was; the ``generate`` span was ``request`` (a
frontend span's name without a route), and ``trace`` labelled it ``frontend`` as it
labels the ``http-request`` span above it. A worker span whose caller's file was not
read was ``worker request`` too, though Dynamo logs its name (``handle_payload``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import jaeger_spans, ts

_TRACE = "5" * 32
_HTTP, _GENERATE, _WORKER = "a5" * 8, "b5" * 8, "c5" * 8


def _line(at: float, message: str, span: str, **fields: Any) -> str:
    return json.dumps({"time": ts(at), "level": "INFO", "target": "request_span",
                       "message": message, "span_id": span, "trace_id": _TRACE, **fields})


def _logs(tmp_path: Path, worker_ahead: float = 0.0, *, completed: bool = False) -> list[str]:
    """The three spans; `completed`: with the line Dynamo logs at DEBUG level that says
    the request succeeded, `worker_ahead`: the worker's clock so many seconds ahead."""
    front = {"span_name": "http-request", "method": "POST", "uri": "/inference/v1/generate",
             "version": "HTTP/1.1", "x_request_id": "1"}
    inner = {"span_name": "generate", "parent_id": _HTTP, "request_id": "r-1"}
    work = {"span_name": "handle_payload", "parent_id": _GENERATE, "component": "backend",
            "endpoint": "generate", "x_request_id": "1"}
    (tmp_path / "frontend.jsonl").write_text("\n".join([
        _line(0.0, "SPAN_FIRST_ENTRY", _HTTP, **front),
        _line(0.001, "SPAN_FIRST_ENTRY", _GENERATE, **inner),
        _line(0.5, "SPAN_CLOSED", _GENERATE, **inner),
        *([_line(0.5005, "request completed", _HTTP, status="success", **front)]
          if completed else []),
        _line(0.501, "http response sent", _HTTP, status="200", latency_ms="501", **front),
    ]) + "\n")
    (tmp_path / "worker.jsonl").write_text("\n".join([
        _line(0.01 + worker_ahead, "request received", _WORKER, **work),
        _line(0.4 + worker_ahead, "request completed", _WORKER, **work),
    ]) + "\n")
    return [str(tmp_path / "frontend.jsonl"), str(tmp_path / "worker.jsonl")]


def _exported(tmp_path: Path, logs: list[str] | None = None) -> dict[str, dict[str, Any]]:
    out = tmp_path / "jaeger.json"
    logs = _logs(tmp_path) if logs is None else logs
    result = CliRunner().invoke(main, ["export", "jaeger", *logs, "-o", str(out), "-q"])
    assert result.exit_code == 0, result.output
    return jaeger_spans(json.loads(out.read_text()))


def test_a_worker_under_generate_is_named_after_the_http_route(tmp_path: Path) -> None:
    spans = _exported(tmp_path)

    assert spans[_HTTP]["operationName"] == "POST /inference/v1/generate"
    assert spans[_WORKER]["operationName"] == "worker /inference/v1/generate"


def test_a_worker_whose_caller_is_not_in_the_logs_is_named_as_dynamo_logged_it(
        tmp_path: Path) -> None:
    # Only the worker's file: no route to name it after, its own or its caller's. It was
    # "worker request", as every such worker span was, whatever it did.
    worker_only = [log for log in _logs(tmp_path) if log.endswith("worker.jsonl")]
    spans = _exported(tmp_path, worker_only)

    assert set(spans) == {_WORKER}
    assert spans[_WORKER]["operationName"] == "worker handle_payload"


def test_the_generate_step_is_named_as_dynamo_logged_it(tmp_path: Path) -> None:
    spans = _exported(tmp_path)

    assert spans[_GENERATE]["operationName"] == "generate"
    assert spans[_GENERATE]["references"][0]["spanID"] == _HTTP


def test_trace_labels_the_generate_step_by_its_logged_name(tmp_path: Path) -> None:
    logs = _logs(tmp_path)
    doc = CliRunner().invoke(main, ["trace", "r-1", *logs, "--format", "json", "-q"])
    text = CliRunner().invoke(main, ["trace", "r-1", *logs, "-q"])

    assert doc.exit_code == text.exit_code == 0, doc.output + text.output
    [request] = json.loads(doc.stdout)["requests"]
    names = {s["span_id"]: (s["side"], s["name"]) for s in request["spans"]}
    assert names == {_HTTP: ("frontend", "http-request"), _GENERATE: ("frontend", "generate"),
                     _WORKER: ("worker-0", "handle_payload")}
    labels = [line.split("█")[0].strip() for line in text.stdout.splitlines() if "█" in line]
    assert labels == ["#1 frontend", "frontend generate", "worker-0"]


def test_a_worker_ahead_of_its_generate_caller_is_put_on_its_clock(tmp_path: Path) -> None:
    # The `generate` span logs no outcome: its worker was bounded from below only (and,
    # before, not at all), so a worker 2 s ahead kept its clock, its span 1.5 s after the
    # request had ended, in the export and in the overlap checks.
    logs = _logs(tmp_path, worker_ahead=2.0, completed=True)
    result = CliRunner().invoke(main, ["analyze", *logs, "--format", "json", "-q"])
    offsets = json.loads(result.stdout)["summary"]["clock_offsets_ms"]
    assert offsets == {logs[1]: -1954.5}  # the middle of [-2009, -1900] ms
    spans = _exported(tmp_path, logs)
    generate, worker = spans[_GENERATE], spans[_WORKER]
    assert generate["startTime"] <= worker["startTime"]
    assert worker["startTime"] + worker["duration"] <= generate["startTime"] + generate["duration"]
