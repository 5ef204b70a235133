"""OTLP/HTTP exports to an endpoint that answers with a redirect (an ingress sending
http to https, a collector that moved), as a real receiver behind it sees them.

The exporter sends with redirects off and counts any 3xx answer as delivered: every
span and metric was dropped, the export reported a success and nothing was logged.
"""

from __future__ import annotations

import logging

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult

from ridtrace.tracing.otlp import otlp_exporter
from tests.support.otlp_receiver import (
    export_one_of_each,
    otlp_receiver,
    redirecting_collector,
)

pytestmark = pytest.mark.usefixtures("telemetry_shut_down")


def test_a_redirect_that_keeps_the_post_is_followed_and_said(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with otlp_receiver() as receiver, redirecting_collector(receiver.endpoint) as endpoint:
        with caplog.at_level(logging.WARNING):
            export_one_of_each("moved", {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint})
        assert [s.name for s in receiver.wait_for(1, timeout=10)] == ["s"]
        receiver.wait_for_metric_exports(1, timeout=10)
    said = sorted(r.getMessage() for r in caplog.records if "redirect" in r.getMessage())
    assert len(said) == 2, said  # once per exporter
    assert f"a redirect to {receiver.endpoint}/v1/metrics" in said[0]
    assert f"a redirect to {receiver.endpoint}/v1/traces" in said[1]


def test_a_redirect_is_said_once_per_exporter_not_once_per_export(
    caplog: pytest.LogCaptureFixture,
) -> None:
    span = TracerProvider().get_tracer("t").start_span("s")
    span.end()
    with otlp_receiver() as receiver, redirecting_collector(receiver.endpoint, 307) as endpoint:
        exporter = otlp_exporter({}, "traces", endpoint + "/v1/traces")
        with caplog.at_level(logging.WARNING):
            results = [exporter.export([span]) for _ in range(3)]  # type: ignore[list-item]
        exporter.shutdown()
        receiver.wait_for(3, timeout=10)
    assert results == [SpanExportResult.SUCCESS] * 3
    assert len([r for r in caplog.records if "redirect" in r.getMessage()]) == 1


def test_a_redirect_to_another_origin_does_not_carry_the_exports_credentials() -> None:
    # requests drops `authorization` there; the OTLP headers are as often credentials.
    with otlp_receiver() as receiver, redirecting_collector(receiver.endpoint, 307) as endpoint:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
               "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20t,x-api-key=k,x-b=1"}
        export_one_of_each("moved", env)
        receiver.wait_for(1, timeout=10)
    assert "authorization" not in receiver.headers[0]
    assert "x-api-key" not in receiver.headers[0]
    assert "x-b" not in receiver.headers[0]


@pytest.mark.parametrize("status", [301, 302, 303])
def test_a_redirect_that_would_resend_the_export_as_a_get_is_a_failed_export(
    status: int, caplog: pytest.LogCaptureFixture,
) -> None:
    span = TracerProvider().get_tracer("t").start_span("s")
    span.end()
    with redirecting_collector("https://collector.example:4318", status) as endpoint:
        exporter = otlp_exporter({}, "traces", endpoint + "/v1/traces")
        with caplog.at_level(logging.ERROR):
            result = exporter.export([span])  # type: ignore[list-item]
        exporter.shutdown()
    assert result is SpanExportResult.FAILURE
    (error,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert str(status) in error
    assert "https://collector.example:4318/v1/traces" in error
