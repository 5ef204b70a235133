"""OTLP/HTTP exports to an endpoint that answers 2xx with an HTML page: no OTLP receiver
(Jaeger's UI port 16686, a web server, which answer any POST with their page).

The exporter counts any 2xx as delivered: every span and metric was dropped while each
export reported a success and nothing was logged.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult

from ridtrace.tracing.otlp import otlp_exporter
from tests.frontend_plugin.conftest import exporting_frontend
from tests.support.otlp_receiver import (
    answering_200,
    answering_json,
    export_one_of_each,
    web_page_server,
)

NOT_A_RECEIVER = "it is not an OTLP receiver"


pytestmark = pytest.mark.usefixtures("telemetry_shut_down")


def test_an_html_answer_fails_the_export_and_is_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    span = TracerProvider().get_tracer("t").start_span("s")
    span.end()
    with web_page_server() as endpoint:
        exporter = otlp_exporter({}, "traces", endpoint + "/v1/traces")
        with caplog.at_level(logging.WARNING):
            results = [exporter.export([span]) for _ in range(3)]  # type: ignore[list-item]
        exporter.shutdown()
    assert results == [SpanExportResult.FAILURE] * 3
    said = [r for r in caplog.records if NOT_A_RECEIVER in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.WARNING
    assert f"{endpoint}/v1/traces" in said[0].getMessage()


def test_each_exporter_says_it_for_its_own_url(caplog: pytest.LogCaptureFixture) -> None:
    with web_page_server() as endpoint, caplog.at_level(logging.WARNING):
        export_one_of_each("lost", {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint})
    said = sorted(r.getMessage() for r in caplog.records if NOT_A_RECEIVER in r.getMessage())
    assert len(said) == 2, said
    assert f"{endpoint}/v1/metrics " in said[0] and f"{endpoint}/v1/traces " in said[1]


def _export_one_span(endpoint: str) -> SpanExportResult:
    span = TracerProvider().get_tracer("t").start_span("s")
    span.end()
    exporter = otlp_exporter({}, "traces", endpoint + "/v1/traces")
    try:
        return exporter.export([span])  # type: ignore[list-item, no-any-return]
    finally:
        exporter.shutdown()


@pytest.mark.parametrize("body", [
    b"", b"{}", b'{"partialSuccess": {}}', b'{"partial_success": {}}',
    # Fields an OTLP/JSON reader ignores: a receiver's own, a newer version's.
    b'{"partialSuccess": {}, "requestId": "abc"}',
    b'{"partialSuccess": {"rejectedSpans": "0", "retryAfter": "5s"}}',
])
def test_an_otlp_answer_in_json_is_still_a_delivery(
    body: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    # The exporter sends protobuf; a receiver that answers it in JSON still took it.
    with answering_json(body) as endpoint, caplog.at_level(logging.WARNING):
        assert _export_one_span(endpoint) is SpanExportResult.SUCCESS
    assert not [r for r in caplog.records if NOT_A_RECEIVER in r.getMessage()]


def test_a_partial_success_in_json_is_said(caplog: pytest.LogCaptureFixture) -> None:
    body = b'{"partialSuccess": {"rejectedSpans": "1", "errorMessage": "too old"}}'
    with answering_json(body) as endpoint, caplog.at_level(logging.WARNING):
        assert _export_one_span(endpoint) is SpanExportResult.SUCCESS
    assert [r.getMessage() for r in caplog.records if "rejected" in r.getMessage()] == [
        f"OTLP endpoint {endpoint}/v1/traces rejected 1 spans of an export: too old"]


@pytest.mark.parametrize(("media", "body", "what"), [
    ("application/json", b'{"status": "ok", "id": 7}', "JSON"),
    ("application/json", b"[]", "JSON"),
    ("application/json", b"<html></html>", "JSON"),
    # Protobuf that does not decode as the signal's answer was counted as delivered,
    # with nothing logged (over gRPC the same answer fails the export).
    ("application/x-protobuf", b"\xff\xff\xff\xff", "protobuf"),
    ("application/x-protobuf", b"\x0a\x05ab", "protobuf"),
])
def test_an_answer_that_is_no_otlp_answer_fails_the_export(
    media: str, body: bytes, what: str, caplog: pytest.LogCaptureFixture
) -> None:
    # A web API at the endpoint answers any POST 200 with its own JSON: every span was
    # counted as delivered and dropped, with nothing logged.
    with answering_200(body, media) as endpoint, caplog.at_level(logging.WARNING):
        assert _export_one_span(endpoint) is SpanExportResult.FAILURE
    (said,) = [r for r in caplog.records if NOT_A_RECEIVER in r.getMessage()]
    assert f"{what} that is no OTLP answer" in said.getMessage()


@pytest.mark.parametrize("body", [b"", b"\x12\x00"])
def test_an_otlp_answer_in_protobuf_is_a_delivery(
    body: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    with answering_200(body, "application/x-protobuf") as endpoint, \
            caplog.at_level(logging.WARNING):
        assert _export_one_span(endpoint) is SpanExportResult.SUCCESS
    assert not [r for r in caplog.records if NOT_A_RECEIVER in r.getMessage()]


def test_a_served_frontend_logs_it_when_its_endpoint_is_a_web_page(tmp_path: Path) -> None:
    # As an operator meets it: OTEL_EXPORTER_OTLP_ENDPOINT at Jaeger's UI port.
    with web_page_server() as endpoint, exporting_frontend(tmp_path, endpoint) as frontend:
        pass  # its SIGTERM flushes the exports, and the process is gone after it
    said = [line for line in frontend.lines() if NOT_A_RECEIVER in str(line.get("message"))]
    assert {line["level"] for line in said} == {"WARN"}
    assert sorted(str(line["message"]).split()[2] for line in said) == [
        f"{endpoint}/v1/metrics", f"{endpoint}/v1/traces"]


@pytest.mark.extra("grpc")
def test_an_otlp_grpc_port_fails_the_export_at_once_and_is_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Jaeger's 4317 under the default http/protobuf answers HTTP/2 frames: the exporter
    # took each for a transient error, retried every batch until its timeout and logged
    # the frames' bytes, never that the port speaks gRPC.
    from tests.support.otlp_receiver import otlp_grpc_receiver

    span = TracerProvider().get_tracer("t").start_span("s")
    span.end()
    with otlp_grpc_receiver() as receiver, caplog.at_level(logging.WARNING):
        exporter = otlp_exporter({}, "traces", receiver.endpoint + "/v1/traces")
        results = [exporter.export([span]) for _ in range(2)]  # type: ignore[list-item]
        exporter.shutdown()
    assert results == [SpanExportResult.FAILURE] * 2
    assert not [r for r in caplog.records if "Transient error" in r.getMessage()]
    (said,) = [r for r in caplog.records if "HTTP/2 frames, as an OTLP/gRPC port" in r.getMessage()]
    assert said.levelno == logging.WARNING
    assert "OTEL_EXPORTER_OTLP_PROTOCOL=grpc" in said.getMessage()
