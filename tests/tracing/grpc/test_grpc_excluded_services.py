"""Services OpenTelemetry's gRPC instrumentation is told to leave out get no span from
ridtrace either (``OTEL_PYTHON_GRPC_EXCLUDED_SERVICES``), as URLs
``OTEL_PYTHON_EXCLUDED_URLS`` names get none from the HTTP middleware.

Before, finding no instrumentation span, ridtrace opened its own for every call the
operator had excluded (every health probe), and one more per request message of an
excluded bidirectional stream (reflection).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ridtrace.tracing import format_traceparent
from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, serving

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


async def _echo(requests: AsyncIterator[bytes], context: Any) -> AsyncIterator[bytes]:
    async for request in requests:
        yield request


async def _hello(request: bytes, context: Any) -> bytes:
    return b"hello"


def test_excluded_services_get_no_span_and_keep_their_ids_and_lines(
    log_lines: LogLines, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_PYTHON_GRPC_EXCLUDED_SERVICES", "grpc.health.v1.Health, t.Quiet")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    def add(server: grpc.aio.Server) -> None:
        health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
        quiet = {"Echo": grpc.stream_stream_rpc_method_handler(_echo)}
        loud = {"Hello": grpc.unary_unary_rpc_method_handler(_hello)}
        server.add_generic_rpc_handlers((
            grpc.method_handlers_generic_handler("t.Quiet", quiet),
            grpc.method_handlers_generic_handler("t.Loud", loud),
        ))

    async def go() -> None:
        async with (
            serving(add, interceptors=[RequestTracingInterceptor(tracer_provider=provider)])
            as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            traced = (("traceparent", format_traceparent(CALLER_TRACE, CALLER_SPAN)),)
            check = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), metadata=traced
            )
            assert (await check).status == health_pb2.HealthCheckResponse.SERVING
            echo = channel.stream_stream("/t.Quiet/Echo")(iter([b"a", b"b"]))
            assert [m async for m in echo] == [b"a", b"b"]
            assert await channel.unary_unary("/t.Loud/Hello")(b"") == b"hello"
            await log_lines.wait_for(lambda lines: len(lines.events("request.end")) == 5)

    asyncio.run(go())
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == ["t.Loud/Hello"]
    ends = {e["path"]: e for e in log_lines.events("request.end", stream_index=None)}
    assert set(ends) == {"/grpc.health.v1.Health/Check", "/t.Quiet/Echo", "/t.Loud/Hello"}
    check_end = ends["/grpc.health.v1.Health/Check"]
    # Ids and lines as any call's; the caller's trace still named on them.
    assert check_end["request_id"] and check_end["span_id"] != CALLER_SPAN
    assert (check_end["trace_id"], check_end["parent_span_id"]) == (CALLER_TRACE, CALLER_SPAN)
    items = log_lines.events("request.end", path="/t.Quiet/Echo")
    assert len([i for i in items if i.get("stream_index") is not None]) == 2
    assert all(i["trace_id"] and i["span_id"] for i in items)
