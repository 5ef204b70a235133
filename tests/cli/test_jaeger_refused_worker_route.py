"""`export jaeger` names a worker span after its caller's route, also when the worker
logged a path of its own.

A worker that refused a request (409 Conflict, 401 without the worker token) logs its
own endpoint on the refusal line (``path: /v1/work``), which the read takes as the
span's route. Its span was ``worker /v1/work`` with a ``route=/v1/work`` tag, though it
is CHILD_OF the caller's ``POST /v1/chat/completions`` span in the same file: docs/cli.md
names a worker span after its caller's route. Its own path names it only when its
caller is not in the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import jaeger_spans, rt_at_us

_TRACE, _CALLER = "7" * 32, "a7" * 8
_REFUSED, _SERVED = "b7" * 8, "c7" * 8
_ROUTE = "/v1/chat/completions"


def _logs(tmp_path: Path) -> tuple[Path, Path]:
    caller = {"request_id": "r1", "trace_id": _TRACE, "span_id": _CALLER}
    work = {"request_id": "r1", "trace_id": _TRACE, "parent_span_id": _CALLER}
    front = tmp_path / "frontend.jsonl"
    front.write_text("\n".join([
        rt_at_us(0, "request.start", "frontend", method="POST", path=_ROUTE, **caller),
        rt_at_us(500_000, "request.end", "frontend", status=200, outcome="ok", path=_ROUTE,
                 **caller),
    ]) + "\n")
    worker = tmp_path / "worker.jsonl"
    worker.write_text("\n".join([
        rt_at_us(10_000, "worker.refused", "worker", outcome="conflict", status=409,
                 path="/v1/work", span_id=_REFUSED, **work),
        rt_at_us(20_000, "worker.start", "worker", span_id=_SERVED, **work),
        rt_at_us(400_000, "worker.end", "worker", outcome="ok", span_id=_SERVED, **work),
    ]) + "\n")
    return front, worker


def _exported(tmp_path: Path, *logs: Path) -> dict[str, dict[str, Any]]:
    out = tmp_path / "jaeger.json"
    result = CliRunner().invoke(main, ["export", "jaeger", *map(str, logs), "-o", str(out),
                                       "-q"])
    assert result.exit_code == 0, result.output
    return jaeger_spans(json.loads(out.read_text()))


def _route_tags(span: dict[str, Any]) -> list[str]:
    return [t["value"] for t in span["tags"] if t["key"] == "route"]


def test_a_refusing_worker_is_named_after_its_callers_route(tmp_path: Path) -> None:
    spans = _exported(tmp_path, *_logs(tmp_path))

    assert spans[_CALLER]["operationName"] == f"POST {_ROUTE}"
    refused = spans[_REFUSED]
    assert refused["references"] == [
        {"refType": "CHILD_OF", "traceID": _TRACE, "spanID": _CALLER}]
    assert refused["operationName"] == f"worker {_ROUTE}"
    # Its route tag says the route its name says: the worker's endpoint is no route.
    assert _route_tags(refused) == [_ROUTE]
    # The worker that served logged no path: named so, and no route tag, as before.
    assert spans[_SERVED]["operationName"] == f"worker {_ROUTE}"
    assert _route_tags(spans[_SERVED]) == []


def test_with_no_caller_read_a_refusing_worker_keeps_its_own_path(tmp_path: Path) -> None:
    _, worker = _logs(tmp_path)
    spans = _exported(tmp_path, worker)

    assert spans[_REFUSED]["operationName"] == "worker /v1/work"
    assert _route_tags(spans[_REFUSED]) == ["/v1/work"]
    assert spans[_SERVED]["operationName"] == "worker request"
