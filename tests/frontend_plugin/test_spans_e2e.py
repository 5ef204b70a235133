"""Frontend and worker spans reach a real OTLP/HTTP receiver as one trace."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.frontend_plugin.conftest import start_stack
from tests.support.otlp_receiver import ReceivedSpan, otlp_receiver

SERVER = 2  # SpanKind.SERVER in OTLP's enum


def _spans_for(spans: list[ReceivedSpan], request_id: str) -> list[ReceivedSpan]:
    """The server spans that carry ``request_id`` (operation spans may carry it too)."""
    return [s for s in spans if s.kind == SERVER and s.attributes.get("request_id") == request_id]


def test_worker_span_is_a_child_of_the_frontend_span_with_the_same_ids(tmp_path: Path) -> None:
    with otlp_receiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50"}
        with start_stack(tmp_path, workers=[[]], env=env) as stack:
            response = httpx.post(
                stack.url + "/v1/chat/completions",
                json={"model": "echo", "messages": [{"role": "user", "content": "hi there"}]},
                headers={"x-request-id": "span-check-1"},
                timeout=30,
            )
            assert response.status_code == 200
            request_id = response.headers["x-server-request-id"]
            spans = receiver.wait_until(lambda spans: len(_spans_for(spans, request_id)) >= 2)
    mine = _spans_for(spans, request_id)
    (frontend,) = [s for s in mine if s.service_name == "frontend"]
    (worker,) = [s for s in mine if s.service_name and s.service_name.startswith("worker")]
    assert frontend.attributes["x_request_id"] == worker.attributes["x_request_id"] == "span-check-1"
    assert worker.trace_id == frontend.trace_id
    assert worker.parent_span_id == frontend.span_id
    assert frontend.attributes["http.route"] == "/v1/chat/completions"
    # The HTTP semantic conventions' server attributes (url.scheme is required of a
    # server span), the server's side of the connection, not the client's Host.
    for span, port in ((frontend, stack.frontend.port), (worker, stack.workers[0].port)):
        assert span.attributes["url.scheme"] == "http"
        assert span.attributes["network.protocol.version"] == "1.1"
        assert (span.attributes["server.address"], span.attributes["server.port"]) == (
            "127.0.0.1", port,
        )
    # One telemetry layer per request in ridtrace's own apps: the server span is
    # ridtrace's, and FastAPI's native telemetry adds no span of its own (issue 15).
    assert frontend.name == worker.name == "http-request"
    same_trace = [s for s in spans if s.trace_id == frontend.trace_id]
    assert sorted(s.span_id for s in same_trace) == sorted([frontend.span_id, worker.span_id])
    for log in (tmp_path / "frontend.jsonl", tmp_path / "worker0.jsonl"):
        assert b"ended span" not in log.read_bytes(), f"{log.name}: attributes written after the span ended"


def test_spans_and_metrics_name_ridtraces_version_as_their_scopes(tmp_path: Path) -> None:
    # The tracer and meter were asked for by name alone: every span reached the
    # collector with an empty instrumentation-scope version (Jaeger's
    # otel.scope.version missing), and every series carried otel_scope_version="", so
    # nothing told data recorded under one release's rules from another's.
    from prometheus_client.parser import text_string_to_metric_families

    from ridtrace import __version__

    with otlp_receiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50"}
        with start_stack(tmp_path, workers=[[]], env=env) as stack:
            response = httpx.post(
                stack.url + "/v1/chat/completions",
                json={"model": "echo", "messages": [{"role": "user", "content": "scope"}]},
                timeout=30,
            )
            assert response.status_code == 200
            request_id = response.headers["x-server-request-id"]
            spans = receiver.wait_until(lambda spans: len(_spans_for(spans, request_id)) >= 2)
            scrapes = [httpx.get(url + "/metrics", timeout=10).text
                       for url in (stack.url, stack.workers[0].url)]
    assert {s.scope for s in _spans_for(spans, request_id)} == {("ridtrace.tracing", __version__)}
    for text in scrapes:
        versions = {sample.labels.get("otel_scope_version")
                    for family in text_string_to_metric_families(text)
                    if family.name.startswith("ridtrace_") for sample in family.samples}
        assert versions == {__version__}


def test_a_refused_body_id_flags_its_span_as_a_refused_header_id_does(tmp_path: Path) -> None:
    # jaeger.md's search `x_request_id_rejected=true` finds a refused body id's request:
    # it was counted in the metric, and its span carried nothing to find it by.
    with otlp_receiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50"}
        with start_stack(tmp_path, workers=[[]], env=env) as stack:
            refused = httpx.post(stack.url + "/inference/v1/generate", timeout=30,
                                 json={"prompt": "hi", "request_id": "r" * 200})
            assert refused.status_code == 400, refused.text
            request_id = refused.headers["x-server-request-id"]
            spans = receiver.wait_until(lambda spans: len(_spans_for(spans, request_id)) >= 1)
    (span,) = _spans_for(spans, request_id)
    assert span.attributes["x_request_id_rejected"] is True
