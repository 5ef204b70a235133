"""Client id reuse in the logs of Dynamo releases whose spans carry no request_id.

Dynamo's logging guide shows its JSONL as such a release writes it: `SPAN_CREATED` /
`SPAN_CLOSED` lines with `span_id`, `trace_id` and the client's `x_request_id`, no
`request_id` (the internal id was not logged). Two requests in flight at once with
one `x-request-id` are distinct requests (two spans, two traces), and `client_id_reuse`
is what tells the client; it asked for distinct *logged* request ids, so `analyze`
reported nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.support.extras import ENGINES

_X = "8372eac7-5f43-4d76-beca-0a94cfb311d0"


def _front(t: str, message: str, span: str, trace: str, **more: object) -> str:
    return json.dumps({
        "time": t, "level": "INFO", "file": "/workspace/lib/runtime/src/logging.rs",
        "line": 248, "target": "dynamo_runtime::logging", "message": message,
        "method": "POST", "span_id": span, "span_name": "http-request", "trace_id": trace,
        "uri": "/v1/chat/completions", "version": "HTTP/1.1", "x_request_id": _X, **more,
    })


def _worker(t: str, message: str, span: str, parent: str, trace: str, **more: object) -> str:
    return json.dumps({
        "time": t, "level": "INFO",
        "file": "/workspace/lib/runtime/src/pipeline/network/ingress/push_endpoint.rs",
        "line": 108, "target": "dynamo_runtime::pipeline::network::ingress::push_endpoint",
        "message": message, "component": "backend", "endpoint": "generate",
        "namespace": "dynamo", "parent_id": parent, "span_id": span,
        "span_name": "handle_payload", "trace_id": trace, "x_request_id": _X, **more,
    })


def _closed(us: int) -> dict[str, int]:
    return {"time.busy_us": 900, "time.duration_us": us, "time.idle_us": us - 900}


def _request(span: str, trace: str, work: str, start: float, seconds: float) -> list[str]:
    def at(s: float) -> str:
        return f"2025-09-02T17:01:{s:09.6f}Z"
    us = int(seconds * 1_000_000)
    return [
        _front(at(start), "SPAN_CREATED", span, trace),
        _worker(at(start + 0.001), "SPAN_CREATED", work, span, trace),
        _worker(at(start + seconds - 0.002), "SPAN_CLOSED", work, span, trace,
                **_closed(us - 3000)),
        _front(at(start + seconds), "SPAN_CLOSED", span, trace, **_closed(us)),
    ]


def _analyze(log: Path, engine: str) -> dict[str, list[dict[str, object]]]:
    result = CliRunner().invoke(main, ["analyze", str(log), "--format", "json", "-q",
                                       "--engine", engine])
    assert result.exit_code == 0, result.output
    found: dict[str, list[dict[str, object]]] = json.loads(result.stdout)
    return found


@pytest.mark.parametrize("engine", ENGINES)
def test_two_requests_in_flight_with_one_client_id_are_reused(
    tmp_path: Path, engine: str
) -> None:
    lines = sorted(
        [*_request("906902a4e74b4264", "3924188ea88d40febdfa173afd246a3a",
                   "5a732a3721814f5e", 46.0, 1.6),
         *_request("6959a1b2d1ee41a5", "425ef761ca5b44c795b4c912f1d84b39",
                   "b035f33bdd5c4b50", 46.5, 1.6)],
        key=lambda line: json.loads(line)["time"])
    log = tmp_path / "dynamo.jsonl"
    log.write_text("\n".join(lines) + "\n")
    report = _analyze(log, engine)
    reuse = [f for f in report["findings"] if f["kind"] == "client_id_reuse"]
    assert [(f["x_request_id"], f["span_id"]) for f in reuse] == [(_X, "906902a4e74b4264")]
    assert "(spans 906902a4e74b4264, 6959a1b2d1ee41a5)" in str(reuse[0]["detail"])
    assert [e["line"] for e in reuse[0]["evidence"]] == [1, 6, 3, 8]  # type: ignore[index]


@pytest.mark.parametrize("engine", ENGINES)
def test_one_request_with_its_worker_is_no_reuse(tmp_path: Path, engine: str) -> None:
    lines = _request("906902a4e74b4264", "3924188ea88d40febdfa173afd246a3a",
                     "5a732a3721814f5e", 46.0, 1.6)
    log = tmp_path / "dynamo.jsonl"
    log.write_text("\n".join(lines) + "\n")
    assert _analyze(log, engine)["findings"] == []


@pytest.mark.parametrize("engine", ENGINES)
def test_back_to_back_requests_are_no_reuse(tmp_path: Path, engine: str) -> None:
    lines = [*_request("906902a4e74b4264", "3924188ea88d40febdfa173afd246a3a",
                       "5a732a3721814f5e", 40.0, 1.6),
             *_request("6959a1b2d1ee41a5", "425ef761ca5b44c795b4c912f1d84b39",
                       "b035f33bdd5c4b50", 46.5, 1.6)]
    log = tmp_path / "dynamo.jsonl"
    log.write_text("\n".join(lines) + "\n")
    assert _analyze(log, engine)["findings"] == []
