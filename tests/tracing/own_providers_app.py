"""A user's app that set up OpenTelemetry itself (as ``opentelemetry-instrument`` does)
before following ridtrace's docs: ``configure_tracing`` and ``configure_metrics`` too.

Run under uvicorn by tests/tracing/test_lifespan_e2e.py; its own exporters read OTEL_*.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from opentelemetry import metrics, trace
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from ridtrace import RequestTracingMiddleware, configure_metrics, configure_tracing

APPS_OWN = Resource.create({"service.name": "apps-own"})


def create_app() -> FastAPI:
    tracer_provider = TracerProvider(resource=APPS_OWN)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(tracer_provider)
    meter_provider = MeterProvider(
        resource=APPS_OWN, metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())]
    )
    metrics.set_meter_provider(meter_provider)

    configure_tracing("users-app")
    configure_metrics("users-app")

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        tracer_provider.shutdown()  # the application's providers are its own to flush
        meter_provider.shutdown()

    app = FastAPI(lifespan=lifespan)
    app.add_middleware(RequestTracingMiddleware)

    @app.get("/items/{item}")
    async def item(item: str) -> dict[str, str]:
        return {"item": item}

    return app
