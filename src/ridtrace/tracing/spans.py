"""Tracer-provider setup from the standard OTEL_* environment variables."""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    DEFAULT_OFF,
    DEFAULT_ON,
    ParentBasedTraceIdRatio,
    Sampler,
    TraceIdRatioBased,
)

from ridtrace.tracing import lifecycle

__all__ = [
    "configure_tracing",
    "exporter_names",
    "otlp_endpoint",
    "otlp_export_endpoint",
    "otlp_exporter_module",
    "otlp_protocol",
    "sdk_disabled",
    "service_resource",
]

_FIXED_SAMPLERS: dict[str, Sampler] = {
    "always_on": ALWAYS_ON,
    "always_off": ALWAYS_OFF,
    "parentbased_always_on": DEFAULT_ON,
    "parentbased_always_off": DEFAULT_OFF,
}
_RATIO_SAMPLERS = {
    "traceidratio": TraceIdRatioBased,
    "parentbased_traceidratio": ParentBasedTraceIdRatio,
}


def configure_tracing(
    service_name: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    set_global: bool = True,
) -> TracerProvider:
    """Build an SDK tracer provider that exports over OTLP when an endpoint is set.

    OpenTelemetry's environment conventions apply, and the environment wins over the
    code: ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES`` over ``service_name``
    (a default, used only when neither names the service), ``OTEL_TRACES_SAMPLER`` /
    ``OTEL_TRACES_SAMPLER_ARG``, ``OTEL_EXPORTER_OTLP_ENDPOINT`` /
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ``OTEL_EXPORTER_OTLP_PROTOCOL`` /
    ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` (``grpc`` needs the ``grpc`` extra),
    ``OTEL_TRACES_EXPORTER`` (``otlp``, ``console``, ``none``) and the exporter's and
    batch processor's other standard variables. Without an endpoint the provider still
    mints real trace and span ids but exports nothing, so a service with no collector
    runs unchanged.
    ``OTEL_SDK_DISABLED=true`` returns a provider with no processor and leaves the
    global one alone. With ``set_global``, an SDK provider the application already set
    globally is returned as it is: nothing is added to it, and it stays the
    application's to shut down.

    The provider is shut down (its batch flushed) by :func:`shutdown_telemetry`, which
    ridtrace's apps and :func:`telemetry_lifespan` call before the process exits.
    """
    env = os.environ if environ is None else environ
    provider = TracerProvider(
        resource=service_resource(service_name, env), sampler=_sampler(env)
    )
    if sdk_disabled(env):
        return provider
    if set_global:
        existing = trace.get_tracer_provider()
        if isinstance(existing, TracerProvider) and not lifecycle.built_here(existing):
            # The application set up its own (opentelemetry-instrument, say): its spans
            # already go where it chose, and the global one cannot be replaced anyway.
            return existing
    endpoint = otlp_export_endpoint(env, "traces")
    if endpoint:
        exporter_module = otlp_exporter_module(env, "traces")
        provider.add_span_processor(
            BatchSpanProcessor(exporter_module.OTLPSpanExporter(endpoint=endpoint))
        )
    if "console" in exporter_names(env, "traces"):
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    lifecycle.own(provider)
    if set_global:
        trace.set_tracer_provider(provider)
    return provider


def sdk_disabled(env: Mapping[str, str]) -> bool:
    """``OTEL_SDK_DISABLED=true``: telemetry off, as the specification says."""
    return env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"


def otlp_protocol(env: Mapping[str, str], signal: str) -> str:
    """``OTEL_EXPORTER_OTLP_{SIGNAL}_PROTOCOL`` or ``OTEL_EXPORTER_OTLP_PROTOCOL``:
    ``grpc``, or ``http/protobuf`` (the default). ``http/json`` is sent as
    http/protobuf, which every OTLP/HTTP receiver also takes on the same URL.

    Read, not assumed: a collector's gRPC port (4317) answers nothing an HTTP
    exporter sends, and every span was lost with only the exporter's retries to show.
    """
    for key in (f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        value = env.get(key, "").strip().lower()
        if not value:
            continue
        if value in ("http/protobuf", "http/json"):
            return "http/protobuf"
        if value == "grpc":
            return "grpc"
        raise ValueError(f"{key}={env[key]!r}: OTLP protocols are grpc, http/protobuf, http/json")
    return "http/protobuf"


# What OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER may name. "prometheus" is the
# GET /metrics route, which ridtrace serves whatever the variable says.
_EXPORTERS = {
    "traces": ("otlp", "console", "none"),
    "metrics": ("otlp", "prometheus", "console", "none"),
}
# The SDK's defaults when OTLP export is asked for by name but no endpoint is set.
_DEFAULT_ENDPOINTS = {"grpc": "http://localhost:4317", "http/protobuf": "http://localhost:4318"}


def exporter_names(env: Mapping[str, str], signal: str) -> frozenset[str]:
    """The exporters ``OTEL_{SIGNAL}_EXPORTER`` names (comma list; ``otlp`` when unset),
    ``none`` left out. An unknown name raises ``ValueError`` naming the variable.

    Read, not assumed: ``OTEL_TRACES_EXPORTER=none`` beside a shared
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` (metrics wanted, spans not) exported every span.
    """
    key = f"OTEL_{signal.upper()}_EXPORTER"
    raw = env.get(key, "")
    names = {name.strip().lower() for name in raw.split(",") if name.strip()} or {"otlp"}
    unknown = names.difference(_EXPORTERS[signal])
    if unknown:
        raise ValueError(
            f"{key}={raw!r}: ridtrace exports {signal} with {', '.join(_EXPORTERS[signal])}"
        )
    return frozenset(names - {"none"})


def otlp_export_endpoint(env: Mapping[str, str], signal: str) -> str | None:
    """Where ``signal`` goes over OTLP, or ``None`` for no OTLP export.

    ``OTEL_{SIGNAL}_EXPORTER`` decides whether OTLP is used at all; the endpoint
    variables where to (:func:`otlp_endpoint`). With no endpoint set, nothing is sent,
    unless the exporter variable names ``otlp`` itself: then the SDK's default
    (``localhost:4318``, ``4317`` over grpc), as its documentation says.
    """
    if "otlp" not in exporter_names(env, signal):
        return None
    endpoint = otlp_endpoint(env, signal)
    if endpoint is None and env.get(f"OTEL_{signal.upper()}_EXPORTER", "").strip():
        protocol = otlp_protocol(env, signal)
        endpoint = otlp_endpoint(
            {**env, "OTEL_EXPORTER_OTLP_ENDPOINT": _DEFAULT_ENDPOINTS[protocol]}, signal
        )
    return endpoint


def otlp_endpoint(env: Mapping[str, str], signal: str) -> str | None:
    """The OTLP URL for ``signal`` (``traces``, ``metrics``), or ``None``.

    Over http/protobuf the base endpoint gets the signal's path (``/v1/traces``); over
    grpc it is used as it is, as the specification says. A signal's own endpoint is
    always used as it is.
    """
    specific = env.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT")
    if specific:
        return specific
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if not base:
        return None
    if otlp_protocol(env, signal) == "grpc":
        return base
    return f"{base.rstrip('/')}/v1/{signal}"


def otlp_exporter_module(env: Mapping[str, str], signal: str) -> Any:
    """The OTLP exporter module for `signal` (``traces`` or ``metrics``) over the protocol
    ``OTEL_EXPORTER_OTLP_[signal_]PROTOCOL`` names. Imported on use: the exporter pulls in
    requests/protobuf (or grpcio), which services that export nothing should not pay for."""
    module = {"traces": "trace_exporter", "metrics": "metric_exporter"}[signal]
    if otlp_protocol(env, signal) != "grpc":
        return importlib.import_module(f"opentelemetry.exporter.otlp.proto.http.{module}")
    # The gRPC exporter comes with the ``grpc`` extra, not with the core: say so.
    try:
        return importlib.import_module(f"opentelemetry.exporter.otlp.proto.grpc.{module}")
    except ImportError as exc:
        raise ImportError(
            "OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs opentelemetry-exporter-otlp-proto-grpc: "
            "pip install 'ridtrace[grpc]'"
        ) from exc


def service_resource(default_service: str | None, env: Mapping[str, str]) -> Resource:
    """The resource: ``OTEL_RESOURCE_ATTRIBUTES`` and ``OTEL_SERVICE_NAME`` over ridtrace's
    default name (the SDK's own merge would let the code win)."""
    attributes: dict[str, str] = {"service.name": default_service or "ridtrace"}
    for item in env.get("OTEL_RESOURCE_ATTRIBUTES", "").split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip():
            attributes[key.strip()] = unquote(value.strip())
    if env.get("OTEL_SERVICE_NAME"):
        attributes["service.name"] = env["OTEL_SERVICE_NAME"]
    return Resource.create(attributes)


def _sampler(env: Mapping[str, str]) -> Sampler:
    name = env.get("OTEL_TRACES_SAMPLER", "parentbased_always_on").strip().lower()
    if name in _RATIO_SAMPLERS:
        try:
            rate = float(env.get("OTEL_TRACES_SAMPLER_ARG", "1.0"))
        except ValueError:
            rate = 1.0
        return _RATIO_SAMPLERS[name](min(max(rate, 0.0), 1.0))
    return _FIXED_SAMPLERS.get(name, DEFAULT_ON)
