"""`annotate_span` never replaces the ids ridtrace puts on the server span.

`annotate_span(request_id="FORGED")` replaced the span's `request_id`: the response
header carried the real id, and a search of the trace backend for the id the client
quoted found nothing. `annotate_request` already writes such a field with a leading `_`.
"""

from __future__ import annotations

import asyncio

import httpx
from fastapi import FastAPI
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ridtrace import RequestTracingMiddleware
from ridtrace.tracing import annotate_span


def test_an_apps_attribute_named_like_an_id_is_set_beside_it() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    app = FastAPI(telemetry={"tracing": False, "metrics": False, "logs": False})

    @app.get("/order")
    def order() -> str:
        annotate_span(request_id="FORGED", x_request_id="FORGED2", tenant="acme")
        return "ok"

    app.add_middleware(RequestTracingMiddleware, tracer_provider=provider)

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.get("/order", headers={"x-request-id": "mine"})

    answer = asyncio.run(go())
    (span,) = exporter.get_finished_spans()
    attributes = dict(span.attributes or {})
    assert attributes["request_id"] == answer.headers["x-server-request-id"]
    assert attributes["x_request_id"] == "mine"
    assert (attributes["_request_id"], attributes["_x_request_id"]) == ("FORGED", "FORGED2")
    assert attributes["tenant"] == "acme"
