"""A gateway and its backend, each wired as the README says and exporting no span.

With no OTLP endpoint set, `configure_tracing()` installs an SDK that records nothing,
and ridtrace mints the ids the log lines carry. `propagate.inject` in the gateway handed
on the client's span, or nothing, not those ids: each backend request started a trace
of its own, linked to no line of the gateway's, and `analyze` counted every forwarded
request twice, with a false `client_id_reuse` for a client id passed on by requests
one after another. Both services under real uvicorn.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.support.otlp_receiver import OtlpReceiver
from tests.tracing.conftest import app_server, wait_for_lines

_NO_EXPORT = {"OTEL_EXPORTER_OTLP_ENDPOINT": "", "OTEL_TRACES_EXPORTER": "none"}
_CALLER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def _ends(log: Path, request_ids: set[str]) -> dict[str, dict[str, object]]:
    lines = wait_for_lines(log, lambda got: request_ids <= {
        x.get("request_id") for x in got if x.get("event") == "request.end"})
    return {str(x["request_id"]): x for x in lines if x.get("event") == "request.end"}


def test_a_forwarded_request_is_one_request_in_both_services_logs(
    tmp_path: Path, receiver: OtlpReceiver,
) -> None:
    for name in ("backend", "gateway"):
        (tmp_path / name).mkdir()
    with app_server(tmp_path / "backend", receiver, env=_NO_EXPORT) as backend, app_server(
        tmp_path / "gateway", receiver, app="tests.tracing.gateway_app:create_app",
        env={**_NO_EXPORT, "RIDTRACE_TEST_BACKEND": backend.url},
    ) as gateway, httpx.Client(timeout=10) as client:
        # One client id reused, one request after another; then one with a caller's trace.
        # Each next one once both services logged the last one's end: a request's end is
        # logged after its answer left, so one reusing its id at once may overlap it in
        # the logs (a documented client_id_reuse), which is no forwarded request's doing.
        answers = []
        for _ in range(3):
            answers.append(client.get(gateway.url + "/forward",
                                      headers={"x-request-id": "retry-1"}))
            _ends(tmp_path / "gateway" / "app.jsonl", {answers[-1].json()["request_id"]})
            _ends(tmp_path / "backend" / "app.jsonl",
                  {answers[-1].json()["backend"]["request_id"]})
        answers.append(client.get(gateway.url + "/forward",
                                  headers={"x-request-id": "traced-1", "traceparent": _CALLER}))
        assert [a.status_code for a in answers] == [200] * 4
        front = _ends(tmp_path / "gateway" / "app.jsonl",
                      {a.json()["request_id"] for a in answers})
        back = _ends(tmp_path / "backend" / "app.jsonl",
                     {a.json()["backend"]["request_id"] for a in answers})
    for answer in answers:
        caller = front[answer.json()["request_id"]]
        called = back[answer.json()["backend"]["request_id"]]
        # The backend continues the gateway request its lines name, not the client's span.
        assert (called["trace_id"], called["parent_span_id"]) == (
            caller["trace_id"], caller["span_id"])
    assert front[answers[-1].json()["request_id"]]["trace_id"] == _CALLER.split("-")[1]

    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("gateway", "backend"):
        shutil.copy(tmp_path / name / "app.jsonl", logs / f"{name}.jsonl")
    got = CliRunner().invoke(main, ["analyze", str(logs), "--format", "json"])
    assert got.exit_code == 0, got.output
    report = json.loads(got.output)
    # The four forwarded requests once each, and each service's readiness probes.
    probes = [x for x in (*front.values(), *back.values()) if x["path"] == "/"]
    assert report["summary"]["requests"] == 4 + len(probes)
    assert [f for f in report["findings"] if f["kind"] == "client_id_reuse"] == []
