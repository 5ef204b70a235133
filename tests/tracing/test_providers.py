"""configure_tracing / configure_metrics follow OpenTelemetry's environment conventions."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    DEFAULT_ON,
    ParentBasedTraceIdRatio,
    TraceIdRatioBased,
)

from ridtrace.tracing import configure_metrics, configure_tracing, metrics, shutdown_telemetry


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    yield
    shutdown_telemetry()
    metrics.bind_meter_provider(None)


def _service(env: dict[str, str], default: str | None = "ridtrace-default") -> object:
    provider = configure_tracing(default, environ=env, set_global=False)
    return provider.resource.attributes["service.name"]


def test_the_environment_names_the_service_over_the_code() -> None:
    assert _service({}) == "ridtrace-default"
    assert _service({}, None) == "ridtrace"
    assert _service({"OTEL_SERVICE_NAME": "from-env"}) == "from-env"
    assert _service({"OTEL_RESOURCE_ATTRIBUTES": "service.name=attr,team=infer"}) == "attr"
    both = {"OTEL_RESOURCE_ATTRIBUTES": "service.name=attr", "OTEL_SERVICE_NAME": "env"}
    assert _service(both) == "env"  # the specification: OTEL_SERVICE_NAME wins


def test_resource_attributes_are_kept_and_decoded() -> None:
    provider = configure_tracing(
        "svc", environ={"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod%20eu, k8s.pod.name=p-1"},
        set_global=False,
    )
    attributes = provider.resource.attributes
    assert attributes["deployment.environment"] == "prod eu"
    assert attributes["k8s.pod.name"] == "p-1" and attributes["service.name"] == "svc"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, DEFAULT_ON),
        ({"OTEL_TRACES_SAMPLER": "always_off"}, ALWAYS_OFF),
        ({"OTEL_TRACES_SAMPLER": "nonsense"}, DEFAULT_ON),
    ],
)
def test_fixed_samplers(env: dict[str, str], expected: object) -> None:
    assert configure_tracing("s", environ=env, set_global=False).sampler is expected


def test_ratio_samplers_take_the_argument() -> None:
    ratio = configure_tracing("s", environ={
        "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25",
    }, set_global=False).sampler
    assert isinstance(ratio, TraceIdRatioBased) and ratio.rate == 0.25
    parent = configure_tracing("s", environ={
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.5",
    }, set_global=False).sampler
    assert isinstance(parent, ParentBasedTraceIdRatio)
    assert "0.5" in parent.get_description()


def test_always_off_records_no_span() -> None:
    provider = configure_tracing("s", environ={"OTEL_TRACES_SAMPLER": "always_off"}, set_global=False)
    span = provider.get_tracer("t").start_span("x")
    assert not span.is_recording()


def test_sdk_disabled_turns_metrics_off_and_exports_no_spans() -> None:
    disabled = {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    assert configure_metrics("s", environ=disabled, set_global=False) is None
    assert metrics.instruments() is None
    provider = configure_tracing("s", environ=disabled, set_global=False)
    assert provider._active_span_processor._span_processors == ()
    assert shutdown_telemetry() == 0  # nothing of it is ridtrace's to flush


def test_shutdown_is_idempotent_and_unbinds_metrics() -> None:
    configure_tracing("s", environ={}, set_global=False)
    configure_metrics("s", environ={}, set_global=False, prometheus=False)
    assert metrics.instruments() is not None
    assert shutdown_telemetry() == 2
    assert metrics.instruments() is None
    assert shutdown_telemetry() == 0
