"""Tracer-provider setup from the standard OTEL_* environment variables."""

from __future__ import annotations

import logging
import math
import os
import sys
from collections.abc import Mapping
from typing import TextIO
from urllib.parse import unquote

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    DEFAULT_OFF,
    DEFAULT_ON,
    ParentBasedTraceIdRatio,
    Sampler,
    TraceIdRatioBased,
)

from ridtrace.tracing import fastapi_export, lifecycle
from ridtrace.tracing.export_schedule import batch_span_processor
from ridtrace.tracing.otlp import (
    export_timeout,
    otlp_exporter,
    otlp_exporter_module,
)
from ridtrace.tracing.otlp_endpoints import (
    exporter_names,
    otlp_endpoint,
    otlp_export_endpoint,
    otlp_protocol,
)
from ridtrace.tracing.sinks import event_sinks
from ridtrace.tracing.span_limits import span_limits

__all__ = [
    "configure_tracing",
    "console_stream",
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
    batch processor's other standard variables (headers, timeout, compression, TLS
    files, ``OTEL_BSP_*``), all read from ``environ`` when it is given. Without an
    endpoint the provider still mints real trace and span ids but exports nothing, so a
    service with no collector runs unchanged.
    ``OTEL_SDK_DISABLED=true`` returns a provider with no processor and leaves the
    global one alone. With ``set_global``, an SDK provider the application already set
    globally is returned as it is: nothing is added to it, and it stays the
    application's to shut down. Called again before :func:`shutdown_telemetry`, it
    returns the provider of the first call; called after it, the same provider, which
    exports again as this call's environment says (a lifespan that starts after the
    shutdown revives its exporters by itself: :func:`~ridtrace.tracing.lifecycle.revive_telemetry`).

    The provider is shut down (its batch flushed) by :func:`shutdown_telemetry`, which
    ridtrace's apps and :func:`telemetry_lifespan` call before the process exits.
    """
    env = os.environ if environ is None else environ
    provider = TracerProvider(  # exit: lifecycle's bounded shutdown, not the SDK's hook
        resource=service_resource(service_name, env), sampler=_sampler(env),
        shutdown_on_exit=False,
        # None: the SDK reads os.environ itself, as it always has.
        span_limits=None if env is os.environ else span_limits(env),
    )
    if sdk_disabled(env):
        return provider
    if not set_global:
        lifecycle.own(provider, flush_limit=_add_exporters(provider, env))
        return provider
    existing = trace.get_tracer_provider()
    if isinstance(existing, TracerProvider):
        # The application set up its own (opentelemetry-instrument, say): its spans
        # already go where it chose, and the global one cannot be replaced anyway.
        # Or an earlier call's, still serving (a module run twice: `python app.py`
        # ending in uvicorn.run("app:app")): a second one was never global, ran an
        # exporter thread for nothing, and OpenTelemetry warned at every start.
        # Or an earlier call's, shut down: no other may take its place, and a new one
        # beside it was never global, its spans lost. It exports again, as `env` says
        # (its resource and sampler stay the first call's).
        if lifecycle.built_here(existing) and not lifecycle.in_service(existing):
            _export_globally(existing, env)
        return existing
    _export_globally(provider, env)
    trace.set_tracer_provider(provider)
    return provider


def _export_globally(provider: TracerProvider, env: Mapping[str, str]) -> None:
    """`provider`, the global one, exports as `env` says; exporters built anew whenever
    a lifespan starts after `shutdown_telemetry` (`lifecycle.revive_telemetry`)."""
    lifecycle.own(provider, flush_limit=_add_exporters(provider, env),
                  revive=lambda: _export_globally(provider, env))
    if otlp_export_endpoint(env, "traces"):
        fastapi_export.exports_over_otlp("traces", provider)


def _add_exporters(provider: TracerProvider, env: Mapping[str, str]) -> float | None:
    """Add `env`'s span exporters to `provider`; the OTLP exporter's timeout, if any."""
    endpoint = otlp_export_endpoint(env, "traces")
    flush_limit: float | None = None
    if endpoint:
        # Every exporter and processor option from `env`, not the libraries' own reads
        # of os.environ (ridtrace.tracing.otlp).
        provider.add_span_processor(
            batch_span_processor(otlp_exporter(env, "traces", endpoint), env)
        )
        flush_limit = export_timeout(env, "traces")
    if "console" in exporter_names(env, "traces"):
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        provider.add_span_processor(
            batch_span_processor(ConsoleSpanExporter(out=console_stream()), env)
        )
    return flush_limit


def console_stream() -> TextIO:
    """Where the ``console`` exporters print: standard output, as OpenTelemetry's do,
    unless `configure_logging` writes its JSON lines there (``ridtrace serve --log-file
    -``); then standard error. Their indented JSON among the lines made most of a
    container's log lines that are no log line."""
    if any(_is_standard_output(sink.target) for sink in event_sinks()):
        return sys.stderr
    return sys.stdout


def _is_standard_output(target: object) -> bool:
    """`target` is stdout, its buffer, or a file of its own on stdout's descriptor (as
    ``serve --log-file -`` opens it, unbuffered)."""
    if target is sys.stdout or target is getattr(sys.stdout, "buffer", None):
        return True
    try:
        return bool(target.fileno() == sys.stdout.fileno())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):  # no descriptor, or a closed one
        return False


def sdk_disabled(env: Mapping[str, str]) -> bool:
    """``OTEL_SDK_DISABLED=true``: telemetry off, as the specification says."""
    return env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"


def service_resource(default_service: str | None, env: Mapping[str, str]) -> Resource:
    """The resource: ``OTEL_RESOURCE_ATTRIBUTES`` and ``OTEL_SERVICE_NAME`` over ridtrace's
    default name (the SDK's own merge would let the code win)."""
    default = default_service or "ridtrace"
    attributes: dict[str, str] = {}
    for item in env.get("OTEL_RESOURCE_ATTRIBUTES", "").split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip():
            attributes[key.strip()] = unquote(value.strip())
    # An empty name is no name (`service.name=${SERVICE}` with SERVICE unset): it made
    # every process "unknown_service:python" instead of frontend / worker-PORT.
    attributes["service.name"] = (env.get("OTEL_SERVICE_NAME", "").strip()
                                  or attributes.get("service.name", "").strip() or default)
    resource = Resource.create(attributes)
    if env is os.environ:
        return resource
    # Resource.create also reads the process's OTEL_RESOURCE_ATTRIBUTES (the SDK's
    # OTELResourceDetector): with a mapping of its own, a provider carried attributes
    # the mapping never named, those of the environment it was meant to replace.
    from opentelemetry.sdk.resources import OTELResourceDetector

    foreign = set(OTELResourceDetector().detect().attributes) - set(attributes)
    return Resource(
        {k: v for k, v in resource.attributes.items() if k not in foreign}, resource.schema_url
    )


def _sampler(env: Mapping[str, str]) -> Sampler:
    """The sampler `OTEL_TRACES_SAMPLER` names; a value it cannot use is warned about,
    as the specification asks, not silently replaced (a typo sampled everything)."""
    # Empty is unset, as the specification says (a chart's `value: ""` was warned about).
    name = env.get("OTEL_TRACES_SAMPLER", "").strip().lower() or "parentbased_always_on"
    if name in _RATIO_SAMPLERS:
        given = env.get("OTEL_TRACES_SAMPLER_ARG", "").strip() or "1.0"
        try:
            rate = float(given)
        except ValueError:
            rate = math.nan
        if not 0.0 <= rate <= 1.0:  # NaN too
            _warn(f"OTEL_TRACES_SAMPLER_ARG={given!r} is no ratio from 0 to 1; "
                  f"{name} samples {'every' if not rate < 0 else 'no'} trace")
            rate = 0.0 if rate < 0 else 1.0
        return _RATIO_SAMPLERS[name](rate)
    if name in _FIXED_SAMPLERS:
        return _FIXED_SAMPLERS[name]
    # A package's name as registered (OpenTelemetry's own lookup keeps its case).
    installed = _installed_sampler(env["OTEL_TRACES_SAMPLER"].strip(), env)
    if installed is None:
        _warn(f"OTEL_TRACES_SAMPLER={name!r} is no sampler this SDK knows; "
              "using parentbased_always_on")
    return installed or DEFAULT_ON


# Where packages register samplers for OTEL_TRACES_SAMPLER, as OpenTelemetry's own
# configuration (opentelemetry-instrument) looks them up.
_SAMPLER_ENTRY_POINTS = "opentelemetry_traces_sampler"


def _installed_sampler(name: str, env: Mapping[str, str]) -> Sampler | None:
    """The sampler an installed package registers as `name`, built by its factory from
    ``OTEL_TRACES_SAMPLER_ARG`` as OpenTelemetry's configuration builds it; ``None`` when
    no package registers one; parentbased_always_on, warned about, when its factory
    fails or gives no sampler.

    Only the six built-in names were read: a sampler installed to cut the volume
    (`OTEL_TRACES_SAMPLER=my_rules`) was warned about and every trace sampled.
    """
    from importlib.metadata import entry_points

    found = entry_points(group=_SAMPLER_ENTRY_POINTS, name=name) or entry_points(
        group=_SAMPLER_ENTRY_POINTS, name=name.lower())
    for entry in found:
        try:
            sampler = entry.load()(env.get("OTEL_TRACES_SAMPLER_ARG"))
        except Exception as exc:  # a plugin's failure, whatever it is, is reported
            _warn(f"OTEL_TRACES_SAMPLER={name!r}: its factory ({entry.value}) failed: "
                  f"{exc!r}; using parentbased_always_on")
            return DEFAULT_ON
        if isinstance(sampler, Sampler):
            return sampler
        _warn(f"OTEL_TRACES_SAMPLER={name!r}: its factory ({entry.value}) gave no sampler; "
              "using parentbased_always_on")
        return DEFAULT_ON
    return None


def _warn(message: str) -> None:
    logging.getLogger(__name__).warning(message)
