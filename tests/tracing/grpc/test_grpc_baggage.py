"""A gRPC caller's baggage is current in the handler, as an HTTP caller's is."""

from __future__ import annotations

import asyncio
from concurrent import futures
from typing import Any

import grpc
import grpc.aio
import pytest
from opentelemetry import baggage
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import serving

CALLER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
SENT = [
    (("baggage", "tenant=acme"), ("traceparent", CALLER)),
    (("baggage", "tenant=acme"),),
]


def _provider(exporting: bool) -> TracerProvider:
    provider = TracerProvider()
    if exporting:
        provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    return provider


def _tenant(request: bytes, context: Any) -> bytes:
    return str(baggage.get_baggage("tenant")).encode()


async def _tenant_async(request: bytes, context: Any) -> bytes:
    return _tenant(request, context)


def _handlers(handler: Any) -> tuple[grpc.GenericRpcHandler, ...]:
    methods = {"Tenant": grpc.unary_unary_rpc_method_handler(handler)}
    return (grpc.method_handlers_generic_handler("demo.Baggage", methods),)


@pytest.mark.parametrize("exporting", [True, False], ids=["sdk", "no-processor"])
def test_a_callers_baggage_is_current_in_a_grpc_aio_handler(exporting: bool) -> None:
    # The interceptor read the caller's baggage (OTEL_PROPAGATORS names it by default)
    # but made only its span current, so the handler, and every hop it made onward,
    # saw none of it.
    interceptor = RequestTracingInterceptor(tracer_provider=_provider(exporting))

    async def go() -> list[bytes]:
        async with (
            serving(lambda s: s.add_generic_rpc_handlers(_handlers(_tenant_async)),
                    interceptors=[interceptor]) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            call = channel.unary_unary("/demo.Baggage/Tenant")
            return [await call(b"", metadata=metadata) for metadata in SENT]

    assert asyncio.run(go()) == [b"acme", b"acme"]


@pytest.mark.parametrize("exporting", [True, False], ids=["sdk", "no-processor"])
def test_a_callers_baggage_is_current_in_a_synchronous_servers_handler(exporting: bool) -> None:
    interceptor = RequestTracingInterceptor(tracer_provider=_provider(exporting))
    server = grpc.server(futures.ThreadPoolExecutor(2), interceptors=[interceptor])
    server.add_generic_rpc_handlers(_handlers(_tenant))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = channel.unary_unary("/demo.Baggage/Tenant")
            answers = [call(b"", metadata=metadata, timeout=10) for metadata in SENT]
    finally:
        server.stop(None)
    assert answers == [b"acme", b"acme"]
