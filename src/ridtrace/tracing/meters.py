"""Meter-provider setup: OTLP when an endpoint is set, Prometheus text for ``GET /metrics``."""

from __future__ import annotations

import gzip
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from opentelemetry import metrics as otel_metrics
from starlette.requests import Request
from starlette.responses import Response

from ridtrace.tracing import fastapi_export, lifecycle, metrics
from ridtrace.tracing.export_schedule import periodic_metric_reader
from ridtrace.tracing.otlp import export_timeout, otlp_exporter
from ridtrace.tracing.otlp_endpoints import exporter_names, otlp_export_endpoint
from ridtrace.tracing.spans import console_stream, sdk_disabled, service_resource

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics import MeterProvider

__all__ = ["METRICS_PATH", "configure_metrics", "metrics_endpoint"]

METRICS_PATH = "/metrics"


def configure_metrics(
    service_name: str | None = None,
    *,
    prometheus: bool = True,
    environ: Mapping[str, str] | None = None,
    set_global: bool = True,
) -> MeterProvider | None:
    """Build an SDK meter provider and record ridtrace's instruments on it.

    Exports over OTLP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
    ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT``) is set — http/protobuf, or grpc when
    ``OTEL_EXPORTER_OTLP_[METRICS_]PROTOCOL`` says so — every
    ``OTEL_METRIC_EXPORT_INTERVAL`` milliseconds and once more at shutdown, unless
    ``OTEL_METRICS_EXPORTER`` leaves ``otlp`` out (``none``, ``prometheus``); with
    ``prometheus`` it also feeds :func:`metrics_endpoint`. The resource follows the
    same environment rules as :func:`~ridtrace.tracing.configure_tracing`.
    ``OTEL_SDK_DISABLED=true`` returns ``None`` and records nothing.

    With ``set_global``, an SDK provider the application already set globally is used
    instead and returned: ridtrace's instruments are recorded on it, its readers
    (Prometheus included, if it has one) export them, and it stays the application's
    to shut down. Called again before :func:`shutdown_telemetry`, it returns the
    provider of the first call.
    """
    env = os.environ if environ is None else environ
    if sdk_disabled(env):
        return None
    from opentelemetry.sdk.metrics import MeterProvider

    if set_global:
        existing = otel_metrics.get_meter_provider()
        if isinstance(existing, MeterProvider) and (
            not lifecycle.built_here(existing) or lifecycle.in_service(existing)
        ):
            # The application's own provider: ridtrace's instruments go where its
            # other metrics go. A second provider beside it kept them from its readers.
            # Or an earlier call's, still serving: a second one (never global) added a
            # second Prometheus reader, and GET /metrics listed every family twice,
            # which Prometheus refuses whole.
            if metrics.instruments() is None or not lifecycle.built_here(existing):
                metrics.bind_meter_provider(existing)
            return existing

        set_global = not lifecycle.built_here(existing)  # an earlier one, shut down, stays
    provider = _exporting_provider(service_name, prometheus, env)
    if set_global:
        otel_metrics.set_meter_provider(provider)
        if otlp_export_endpoint(env, "metrics"):
            fastapi_export.exports_over_otlp("metrics", provider)
    return provider


def _exporting_provider(
    service_name: str | None, prometheus: bool, env: Mapping[str, str]
) -> MeterProvider:
    """A meter provider with `env`'s readers, owned, recording ridtrace's instruments.

    Built again when a lifespan starts after `shutdown_telemetry`
    (`lifecycle.revive_telemetry`): a meter provider takes no reader once built, and
    one shut down records nothing. The global one stays the first (OpenTelemetry lets
    no other take its place); ridtrace's instruments move to the new one.
    """
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricReader

    readers: list[MetricReader] = []
    endpoint = otlp_export_endpoint(env, "metrics")
    flush_limit: float | None = None
    if endpoint:
        # Every exporter and reader option from `env` (ridtrace.tracing.otlp).
        readers.append(periodic_metric_reader(otlp_exporter(env, "metrics", endpoint), env))
        flush_limit = export_timeout(env, "metrics")
    if "console" in exporter_names(env, "metrics"):
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter

        readers.append(periodic_metric_reader(ConsoleMetricExporter(out=console_stream()), env))
    if prometheus:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader

        readers.append(PrometheusMetricReader())
    provider = MeterProvider(  # exit: lifecycle's bounded shutdown, not the SDK's hook
        metric_readers=readers, resource=service_resource(service_name, env),
        shutdown_on_exit=False,
    )
    lifecycle.own(provider, flush_limit=flush_limit,
                  revive=lambda: _revived(service_name, prometheus, env))
    metrics.bind_meter_provider(provider)
    return provider


def _revived(service_name: str | None, prometheus: bool, env: Mapping[str, str]) -> None:
    if metrics.bound_provider() is None:  # not configured anew since the shutdown
        _exporting_provider(service_name, prometheus, env)


def _gzip_accepted(accept_encoding: str) -> bool:
    """Whether ``Accept-Encoding`` lists gzip with a weight above 0: prometheus_client's
    own check takes ``gzip;q=0``, which refuses it (RFC 9110 12.5.3), for a yes."""
    for entry in accept_encoding.split(","):
        coding, *params = (part.strip().lower() for part in entry.split(";"))
        if coding == "gzip":
            weights = [p.partition("=")[2].strip() for p in params if p.startswith("q=")]
            try:
                return not weights or float(weights[0]) > 0
            except ValueError:
                return False
    return False


def _acceptable(accept: str) -> tuple[str, bool]:
    """``Accept`` without the entries no answer may take: those weighted ``q=0``, which
    refuse their type (RFC 9110 12.4.2), and OpenMetrics at a version no encoder here
    writes; and whether an entry weighted ``q=0`` refuses the default answer (Prometheus
    text 0.0.4: ``text/plain;q=0``, ``*/*;q=0``). prometheus_client's choice takes
    neither into account: it answered a refused type, and ``version=99`` with a content
    type claiming version 99. The versions kept, 1.0.0 and 2.0.0, are those
    prometheus_client's OpenMetrics encoder writes."""
    kept = []
    refused = False
    for entry in accept.split(","):
        media_type, *params = (part.strip().lower() for part in entry.split(";"))
        values = {key.strip(): value.strip()
                  for key, _, value in (param.partition("=") for param in params)}
        try:
            if float(values.get("q", "1")) <= 0:
                refused |= (media_type in ("text/plain", "text/*", "*/*")
                            and values.get("version", "0.0.4") == "0.0.4")
                continue
        except ValueError:
            pass  # an unreadable weight: left to choose_encoder, as before
        version = values.get("version", "")
        unwritten = version not in ("", "1.0.0", "2.0.0")
        # An unreadable version ("bogus") is left to the fallback in metrics_endpoint.
        if (media_type == "application/openmetrics-text" and unwritten
                and all(part.isdigit() for part in version.split("."))):
            continue
        kept.append(entry)
    return ",".join(kept), refused


async def metrics_endpoint(request: Request) -> Response:
    """``GET /metrics``: the process's registry in the exposition format the scraper's
    ``Accept`` asks for: OpenMetrics, or Prometheus text (0.0.4 when nothing is asked);
    gzip-compressed when its ``Accept-Encoding`` takes gzip.

    Negotiated as prometheus_client's own handlers do: Prometheus asks for OpenMetrics
    first (its ``# EOF`` tells a whole scrape from a cut one), and a scraper that takes
    only text 0.0.4 was answered 1.0.0 text, whatever either asked.

    Its types are imported at run time: FastAPI reads them to serve it as an API route
    (``app.add_api_route``), which labels the scrape with its route template.
    """
    from prometheus_client import REGISTRY
    from prometheus_client.exposition import choose_encoder

    acceptable, default_refused = _acceptable(request.headers.get("accept", ""))
    try:
        encoder, content_type = choose_encoder(acceptable)
    except (TypeError, ValueError):
        # A version it cannot read ("version=bogus") raises there: ignoring the header,
        # as RFC 9110 lets a server, keeps a client's header from making a 500.
        encoder, content_type = choose_encoder("")
    # Vary: a cache between scraper and process must not answer one format, or one
    # encoding, for another.
    headers = {"vary": "Accept, Accept-Encoding"}
    if default_refused and content_type == choose_encoder("")[1]:
        # The default was all that was left, and the scraper refused it (q=0).
        return Response("none of the formats Accept takes can be written\n", status_code=406,
                        media_type="text/plain", headers=headers)
    body = encoder(REGISTRY)
    # Prometheus asks for gzip with every scrape, and prometheus_client's handlers
    # answer it so: the text shrinks several times, on every scrape of every process.
    if _gzip_accepted(request.headers.get("accept-encoding", "")):
        body = gzip.compress(body)
        headers["content-encoding"] = "gzip"
    return Response(body, media_type=content_type, headers=headers)
