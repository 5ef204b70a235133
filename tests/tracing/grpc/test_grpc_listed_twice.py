"""Two ridtrace interceptors on one server (a framework's and the application's): the
call is traced once, as nested HTTP middlewares trace a request once.

Before, each minted its own id: the client's ``x-server-request-id`` was the outer
one's, the handler's log lines carried the inner one's (a search for the id the client
reported missed them), and the call had two spans and two request.start / request.end
pairs, so forensics counted two requests.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent import futures
from typing import Any

import grpc
import grpc.aio
from loguru import logger
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ridtrace.tracing import current_request_id
from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, metadata_dict, serving

CALL_TIMEOUT = 10.0


def _interceptors() -> tuple[list[Any], InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    outer = RequestTracingInterceptor(tracer_provider=provider)
    inner = RequestTracingInterceptor(tracer_provider=provider)
    return [outer, inner], exporter


def _assert_traced_once(
    log_lines: LogLines, exporter: InMemorySpanExporter, reply: bytes, trailing: Any
) -> None:
    [server_id] = metadata_dict(trailing)["x-server-request-id"]
    assert reply.decode() == server_id  # the id the handler ran under is the client's
    [start] = log_lines.events("request.start")
    [end] = log_lines.events("request.end")
    assert start["request_id"] == end["request_id"] == server_id
    [line] = [x for x in log_lines.lines if x["message"] == "in handler"]
    assert line["request_id"] == server_id and line["x_request_id"] == "twice"
    [span] = exporter.get_finished_spans()
    assert span.attributes is not None and span.attributes["request_id"] == server_id


def test_two_interceptors_on_grpc_aio_trace_a_call_once(log_lines: LogLines) -> None:
    interceptors, exporter = _interceptors()

    async def hello(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        logger.info("in handler")
        return str(current_request_id()).encode()

    generic = grpc.method_handlers_generic_handler(
        "probe.Twice", {"Hello": grpc.unary_unary_rpc_method_handler(hello)}
    )

    async def run() -> tuple[bytes, Any]:
        async with (
            serving(lambda s: s.add_generic_rpc_handlers((generic,)), interceptors=interceptors)
            as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            call = channel.unary_unary("/probe.Twice/Hello")(
                b"", metadata=(("x-request-id", "twice"),), timeout=CALL_TIMEOUT
            )
            return await call, await call.trailing_metadata()

    reply, trailing = asyncio.run(run())
    _assert_traced_once(log_lines, exporter, reply, trailing)


def test_two_interceptors_on_a_synchronous_server_trace_a_call_once(
    log_lines: LogLines,
) -> None:
    interceptors, exporter = _interceptors()

    def hello(request: bytes, context: grpc.ServicerContext) -> bytes:
        logger.info("in handler")
        return str(current_request_id()).encode()

    generic = grpc.method_handlers_generic_handler(
        "probe.Twice", {"Hello": grpc.unary_unary_rpc_method_handler(hello)}
    )
    pool = futures.ThreadPoolExecutor(2)
    server = grpc.server(pool, interceptors=interceptors)
    server.add_generic_rpc_handlers((generic,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            reply, call = channel.unary_unary("/probe.Twice/Hello").with_call(
                b"", metadata=(("x-request-id", "twice"),), timeout=CALL_TIMEOUT
            )
    finally:
        stopper = threading.Thread(target=server.stop, args=(None,), daemon=True)
        stopper.start()
        stopper.join(CALL_TIMEOUT)
        pool.shutdown(wait=False, cancel_futures=True)
    _assert_traced_once(log_lines, exporter, reply, call.trailing_metadata())
