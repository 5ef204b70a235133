"""A Dynamo request's two ids are logged on two spans: the client's ``x_request_id`` on
its ``http-request`` span, the internal ``request_id`` on the ``generate`` span nested in
it (``/inference/v1/generate`` opens ``generate`` with ``request_id`` only).

The seed's reproduction in that shape: two callers send ``x-request-id: 1``, the pre-fix
frontend keys both by it, one fails with ``Unlinked response``. The findings are about
the ``generate`` spans, and named no client id (``x_request_id: null``), though the
client sent ``1``; ``trace`` showed each caller as ``request -``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.contract import UNLINKED_RESPONSE
from tests.cli.helpers import analyze_json
from tests.forensics.helpers import follow_as_written, ts


def _line(at: float, message: str, span: str, trace: str, **fields: Any) -> str:
    return json.dumps({"time": ts(at), "level": "INFO", "target": "request_span",
                       "message": message, "span_id": span, "trace_id": trace, **fields})


def _caller(n: int, start: float, end: float, *, unlinked: bool) -> list[str]:
    """One ``/inference/v1/generate`` request keyed by the client's ``1`` (pre-fix)."""
    trace, http, gen = f"{n}" * 32, f"a{n}" * 8, f"b{n}" * 8
    front = {"span_name": "http-request", "method": "POST", "uri": "/inference/v1/generate",
             "version": "HTTP/1.1", "x_request_id": "1"}
    inner = {"span_name": "generate", "parent_id": http, "request_id": "1", "model": "m"}
    lines = [_line(start, "SPAN_FIRST_ENTRY", http, trace, **front),
             _line(start + 0.001, "SPAN_FIRST_ENTRY", gen, trace, **inner)]
    if unlinked:
        lines.append(_line(end - 0.002, "engine generate call failed", gen, trace,
                           error=UNLINKED_RESPONSE, **inner))
    lines += [_line(end - 0.001, "SPAN_CLOSED", gen, trace, **inner),
              _line(end, "http response sent", http, trace, status="500" if unlinked else "200",
                    latency_ms=str(round((end - start) * 1000)), **front)]
    return lines


def _logs(tmp_path: Path) -> Path:
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join([*_caller(1, 0.0, 1.0, unlinked=False),
                              *_caller(2, 0.2, 0.6, unlinked=True)]) + "\n")
    return log


def test_findings_on_a_nested_span_name_the_client_id_of_its_request(tmp_path: Path) -> None:
    code, doc = analyze_json(str(_logs(tmp_path)))

    assert code == 1
    found = {f["kind"]: f for f in doc["findings"]}
    assert set(found) == {"duplicate_in_flight", "unlinked"}
    for finding in found.values():
        assert (finding["request_id"], finding["x_request_id"]) == ("1", "1")


def test_trace_names_the_internal_id_logged_on_the_nested_span(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["trace", "1", str(_logs(tmp_path)), "--format", "json"])

    assert result.exit_code == 0, result.output
    requests = json.loads(result.stdout)["requests"]
    assert [(r["request_id"], r["x_request_id"]) for r in requests] == [("1", "1")] * 2


def test_the_follower_names_both_ids_as_analyze_does(tmp_path: Path) -> None:
    lines = _logs(tmp_path).read_text().splitlines()
    lines.sort(key=lambda line: json.loads(line)["time"])
    folder = tmp_path / "live"
    folder.mkdir()

    found = follow_as_written(folder, [(0.0, "frontend.jsonl", line) for line in lines])

    assert {(f["kind"], f["request_id"], f["x_request_id"]) for f in found} == {
        ("duplicate_in_flight", "1", "1"), ("unlinked", "1", "1")}


def test_trace_shows_a_step_of_a_step_as_part_of_its_request(tmp_path: Path) -> None:
    # Newer Dynamo opens a `client_request` span per call to a worker, inside `generate`,
    # itself inside `http-request`; the worker's `handle_payload` is its child. `trace`
    # took `client_request` (and the worker under it) for a second request of its own,
    # while `analyze` counts one.
    trace, http, gen, call, work = "7" * 32, "a7" * 8, "b7" * 8, "c7" * 8, "d7" * 8
    front = {"span_name": "http-request", "method": "POST", "uri": "/v1/chat/completions",
             "x_request_id": "cli-1"}
    inner = {"span_name": "generate", "parent_id": http, "request_id": "r-7"}
    outer_call = {"span_name": "client_request", "parent_id": gen, "request_id": "r-7",
                  "operation": "generate", "x_request_id": "cli-1"}
    worker = {"span_name": "handle_payload", "parent_id": call, "component": "backend",
              "endpoint": "generate", "x_request_id": "cli-1"}
    log = tmp_path / "all.jsonl"
    log.write_text("\n".join([
        _line(0.0, "SPAN_FIRST_ENTRY", http, trace, **front),
        _line(0.001, "SPAN_FIRST_ENTRY", gen, trace, **inner),
        _line(0.002, "SPAN_FIRST_ENTRY", call, trace, **outer_call),
        _line(0.01, "request received", work, trace, **worker),
        _line(0.8, "request completed", work, trace, **worker),
        _line(0.9, "SPAN_CLOSED", call, trace, **outer_call),
        _line(0.95, "SPAN_CLOSED", gen, trace, **inner),
        _line(0.96, "http response sent", http, trace, status="200", latency_ms="960", **front),
    ]) + "\n")

    result = CliRunner().invoke(main, ["trace", "r-7", str(log), "--format", "json"])

    assert result.exit_code == 0, result.output
    [request] = json.loads(result.stdout)["requests"]
    assert request["span_id"] == http
    assert sorted(s["span_id"] for s in request["spans"]) == [http, gen, call, work]
