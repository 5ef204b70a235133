"""Tracer-provider setup from the standard OTEL_* environment variables."""

from __future__ import annotations

import os
from collections.abc import Mapping

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

__all__ = ["configure_tracing"]


def configure_tracing(
    service_name: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    set_global: bool = True,
) -> TracerProvider:
    """Build an SDK tracer provider that exports over OTLP/HTTP when an endpoint is set.

    Reads ``OTEL_SERVICE_NAME`` (``service_name`` wins when given),
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` and the
    exporter's other standard variables (headers, timeout). Without an endpoint the
    provider still mints real trace and span ids but exports nothing, so a service
    with no collector runs unchanged. ``OTEL_SDK_DISABLED=true`` returns a provider
    with no processor and leaves the global one alone.
    """
    env = os.environ if environ is None else environ
    name = service_name or env.get("OTEL_SERVICE_NAME") or "ridtrace"
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    if env.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return provider
    endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    if endpoint:
        # Imported here: the exporter pulls in requests/protobuf, which services that
        # export nothing should not pay for.
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        traces_endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or (
            endpoint.rstrip("/") + "/v1/traces"
        )
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=traces_endpoint)))
    if set_global:
        trace.set_tracer_provider(provider)
    return provider
