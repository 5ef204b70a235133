"""A Dynamo request's route is its URI's path: no query string, no scheme and authority.

Dynamo's ``http-request`` span logs ``uri`` as axum has it: with the query string
(``?api-version=…``, as Azure OpenAI clients send), and for an HTTP/2 request in
absolute form (``http://host:port/path``). Taken whole as the route, one endpoint was
several in ``audit --by route`` and in Jaeger's operation names.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import ts

_URIS = [("/v1/chat/completions?api-version=2024-02-01", "HTTP/1.1"),
         ("http://10.0.0.5:8000/v1/chat/completions", "HTTP/2.0"),
         ("/v1/chat/completions", "HTTP/1.1")]


def _log(tmp_path: Path) -> Path:
    lines = []
    for n, (uri, version) in enumerate(_URIS):
        span = f"{n + 1:x}" * 16
        head = {"level": "INFO", "target": "dynamo_llm::http::service::service_v2",
                "method": "POST", "span_id": span, "span_name": "http-request",
                "trace_id": span * 2, "uri": uri, "version": version, "request_id": f"r{n}"}
        lines += [json.dumps({"time": ts(n), **head, "level": "WARN", "header": "request-id",
                              "message": "ignoring deprecated client request id header"}),
                  json.dumps({"time": ts(n + 0.5), **head, "message": "http response sent",
                              "status": "200", "latency_ms": "500"})]
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(lines) + "\n")
    return log


def test_audit_by_route_counts_one_route(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["audit", str(_log(tmp_path)), "--by", "route",
                                       "--format", "json", "-q"])

    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["rows"]
    assert [(r["route"], r["requests"]) for r in rows] == [("/v1/chat/completions", 3)]


def test_jaeger_names_each_request_after_the_path(tmp_path: Path) -> None:
    out = tmp_path / "jaeger.json"
    result = CliRunner().invoke(main, ["export", "jaeger", str(_log(tmp_path)), "-o", str(out),
                                       "-q"])

    assert result.exit_code == 0, result.output
    names = {s["operationName"] for t in json.loads(out.read_text())["data"] for s in t["spans"]}
    assert names == {"POST /v1/chat/completions"}
