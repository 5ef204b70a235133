"""The status a call is recorded with is the one its client got.

A handler may set a code and then raise (``context.set_code(NOT_FOUND)``, ``raise
LookupError``): grpc.aio and the synchronous server both answer the code it set, not
UNKNOWN. ridtrace recorded UNKNOWN / outcome ``error`` with a WARN and an error span
for every such call, so a service answering its clients' bad requests that way showed
as failing itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import grpc.aio
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, serving

SERVICE = "probe.Codes"


def _unary(request: bytes, context: Any) -> bytes:
    context.set_code(grpc.StatusCode.NOT_FOUND)
    context.set_details("no such model")
    raise LookupError("no such model")


def _stream(request: bytes, context: Any) -> Iterator[bytes]:
    yield b"first"
    context.set_code(grpc.StatusCode.FAILED_PRECONDITION)
    raise RuntimeError("model unloaded mid-stream")


def _crash(request: bytes, context: Any) -> bytes:
    raise RuntimeError("a real crash")


async def _unary_aio(request: bytes, context: Any) -> bytes:
    return _unary(request, context)


async def _stream_aio(request: bytes, context: Any) -> Any:
    yield b"first"
    context.set_code(grpc.StatusCode.FAILED_PRECONDITION)
    raise RuntimeError("model unloaded mid-stream")


async def _crash_aio(request: bytes, context: Any) -> bytes:
    return _crash(request, context)


def _handlers(unary: Any, stream: Any, crash: Any) -> grpc.GenericRpcHandler:
    return grpc.method_handlers_generic_handler(SERVICE, {
        "Unary": grpc.unary_unary_rpc_method_handler(unary),
        "Stream": grpc.unary_stream_rpc_method_handler(stream),
        "Crash": grpc.unary_unary_rpc_method_handler(crash),
    })


def _client_codes(target: str) -> dict[str, grpc.StatusCode]:
    codes = {}
    with grpc.insecure_channel(target) as channel:
        for method in ("Unary", "Crash"):
            with pytest.raises(grpc.RpcError) as raised:
                channel.unary_unary(f"/{SERVICE}/{method}")(b"", timeout=10)
            codes[method] = raised.value.code()
        with pytest.raises(grpc.RpcError) as raised:
            list(channel.unary_stream(f"/{SERVICE}/Stream")(b"", timeout=10))
        codes["Stream"] = raised.value.code()
    return codes


def _sync_server(interceptor: RequestTracingInterceptor) -> dict[str, grpc.StatusCode]:
    server = grpc.server(futures.ThreadPoolExecutor(4), interceptors=[interceptor])
    server.add_generic_rpc_handlers((_handlers(_unary, _stream, _crash),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        return _client_codes(f"127.0.0.1:{port}")
    finally:
        server.stop(None)


def _aio_server(interceptor: RequestTracingInterceptor) -> dict[str, grpc.StatusCode]:
    async def go() -> dict[str, grpc.StatusCode]:
        async with serving(
            lambda s: s.add_generic_rpc_handlers(
                (_handlers(_unary_aio, _stream_aio, _crash_aio),)
            ),
            interceptors=[interceptor],
        ) as target:
            # The blocking client in a thread: the server shares this loop.
            return await asyncio.to_thread(_client_codes, target)

    return asyncio.run(go())


@pytest.mark.parametrize("run", [_sync_server, _aio_server], ids=["grpc.server", "grpc.aio"])
def test_a_code_set_before_an_exception_is_recorded_as_the_client_got_it(
    run: Any, log_lines: LogLines
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    codes = run(RequestTracingInterceptor(tracer_provider=provider))
    assert codes == {
        "Unary": grpc.StatusCode.NOT_FOUND,
        "Stream": grpc.StatusCode.FAILED_PRECONDITION,
        "Crash": grpc.StatusCode.UNKNOWN,
    }
    ends = {e["rpc_method"].rpartition("/")[2]: e for e in log_lines.events("request.end")}
    spans = {s.name.rpartition("/")[2]: s for s in exporter.get_finished_spans()}
    provider.shutdown()
    for method, code in codes.items():
        assert (ends[method]["grpc_status"], ends[method]["status"]) == (
            code.name, code.value[0]
        ), method
        assert spans[method].attributes["rpc.grpc.status_code"] == code.value[0]
    # The client's own mistakes are not the server's failures; a crash still is.
    for method in ("Unary", "Stream"):
        assert ends[method]["outcome"] == "ok" and ends[method]["level"] == "INFO"
        assert spans[method].status.status_code is not StatusCode.ERROR
    assert ends["Crash"]["outcome"] == "error" and ends["Crash"]["level"] == "WARN"
    assert spans["Crash"].status.status_code is StatusCode.ERROR
