"""An interceptor listed after ridtrace's that raises while the handler is looked up (an
authentication check that raises instead of answering).

gRPC answers such a call ``UNKNOWN`` itself, before any handler runs: the call had no
``request_id`` (none in its metadata either), no ``request.start`` / ``request.end``, no
span and no count, and gRPC's ERROR line named no request, though docs/grpc.md promises
that a refusal by an interceptor listed after ridtrace's is recorded like any other.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import grpc.aio
import pytest

from ridtrace.tracing.grpc import RequestTracingInterceptor
from ridtrace.tracing.logs import configure_logging
from tests.tracing.grpc.conftest import LogLines, metadata_dict

METHOD = "/t.Secure/Hello"


class _Refuses(grpc.ServerInterceptor):  # type: ignore[misc]
    def intercept_service(self, continuation: Any, details: Any) -> Any:
        raise PermissionError("no token")


class _RefusesAio(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    async def intercept_service(self, continuation: Any, details: Any) -> Any:
        raise PermissionError("no token")


def _sync_hello(request: bytes, context: Any) -> bytes:
    return b"hello"


async def _aio_hello(request: bytes, context: Any) -> bytes:
    return b"hello"


@pytest.fixture
def stdlib_lines() -> Iterator[LogLines]:
    lines = LogLines()
    configure_logging(lines, service="grpc-test", level="INFO", intercept_stdlib=True)
    yield lines
    logging.basicConfig(handlers=[logging.NullHandler()], force=True)


def _call(target: str) -> grpc.RpcError:
    with grpc.insecure_channel(target) as channel, pytest.raises(grpc.RpcError) as refused:
        channel.unary_unary(METHOD)(b"", metadata=(("x-request-id", "refused-1"),), timeout=10)
    return refused.value


def _written(lines: LogLines, ended: str) -> list[dict[str, Any]]:
    """request.end and gRPC's ERROR line about the refusal, once both are written."""
    deadline = time.monotonic() + 10
    while True:
        found = lines.events("request.end") + [
            x for x in lines.lines if x["level"] == "ERROR" and ended in x["message"]
        ]
        if len(found) == 2:
            return found
        assert time.monotonic() < deadline, f"written: {lines.lines}"
        time.sleep(0.01)


@pytest.mark.parametrize("kind", ["sync", "aio"])
def test_a_call_an_interceptor_after_ours_raised_on_is_traced(
    stdlib_lines: LogLines, kind: str
) -> None:
    if kind == "sync":
        pool = futures.ThreadPoolExecutor(2)
        server = grpc.server(pool, interceptors=[RequestTracingInterceptor(), _Refuses()])
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            "t.Secure", {"Hello": grpc.unary_unary_rpc_method_handler(_sync_hello)}),))
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        try:
            error = _call(f"127.0.0.1:{port}")
            end, crash = _written(stdlib_lines, "Exception servicing handler: no token")
        finally:
            server.stop(None).wait(10)
            pool.shutdown(wait=False)
        # What gRPC answers by itself, unchanged.
        assert (error.code(), error.details()) == (
            grpc.StatusCode.UNKNOWN, "Error in service handler!")
    else:
        async def go() -> tuple[grpc.RpcError, list[dict[str, Any]]]:
            server = grpc.aio.server(interceptors=[RequestTracingInterceptor(), _RefusesAio()])
            server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
                "t.Secure", {"Hello": grpc.unary_unary_rpc_method_handler(_aio_hello)}),))
            port = server.add_insecure_port("127.0.0.1:0")
            await server.start()
            try:
                error = await asyncio.to_thread(_call, f"127.0.0.1:{port}")
                written = await asyncio.to_thread(
                    _written, stdlib_lines, "Unexpected [PermissionError] raised")
            finally:
                await server.stop(None)
            return error, written

        error, (end, crash) = asyncio.run(go())
        assert (error.code(), error.details()) == (
            grpc.StatusCode.UNKNOWN, "Unexpected <class 'PermissionError'>: no token")

    [request_id] = metadata_dict(error.trailing_metadata())["x-server-request-id"]
    assert (end["request_id"], end["x_request_id"]) == (request_id, "refused-1")
    assert (end["grpc_status"], end["outcome"], end["level"]) == ("UNKNOWN", "error", "WARN")
    assert end["rpc_method"] == METHOD
    assert (crash["request_id"], crash["x_request_id"]) == (request_id, "refused-1")
