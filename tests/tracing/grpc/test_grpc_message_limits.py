"""A request message over ``grpc.max_receive_message_length``: what docs/grpc.md says.

gRPC refuses such a message itself (``RESOURCE_EXHAUSTED``) before ridtrace's wrapper
sees it: a unary call is recorded on grpc.aio from what the interceptor saw (no status)
and leaves no trace on a synchronous server, and in a request stream the handler's
iterator just ends. These tests hold the documented record to what the servers do.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from concurrent import futures

import grpc
import grpc.aio
import pytest

from ridtrace.tracing.grpc import RequestTracingInterceptor
from ridtrace.tracing.grpc.status import NEVER_HANDLED_ERROR
from tests.tracing.grpc.conftest import LogLines, serving
from tests.tracing.grpc.test_grpc_sync_server import CALL_TIMEOUT, _wait_until

SERVICE = "probe.Limits"
LIMIT = 1000
TOO_BIG = b"x" * (LIMIT * 5)
OPTIONS = (("grpc.max_receive_message_length", LIMIT),)


async def _echo(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    return request[:10]


def _count_then_wait(requests: Iterator[bytes], context: grpc.ServicerContext) -> bytes:
    """Returns once the server has seen the call end (a handler returning before that
    is recorded OK: the race docs/grpc.md describes)."""
    ended = threading.Event()
    context.add_callback(ended.set)
    count = sum(1 for _ in requests)
    ended.wait(CALL_TIMEOUT)
    return str(count).encode()


def test_an_oversized_unary_request_on_grpc_aio_is_recorded_without_a_status(
    log_lines: LogLines,
) -> None:
    # grpc.aio refuses the message after the interceptor ran, before the handler: the
    # call is recorded from what the interceptor saw (`unstarted`), naming no status.
    methods = {"Echo": grpc.unary_unary_rpc_method_handler(_echo)}

    async def go() -> None:
        async with serving(
            lambda s: s.add_generic_rpc_handlers(
                (grpc.method_handlers_generic_handler(SERVICE, methods),)
            ),
            interceptors=[RequestTracingInterceptor()],
            options=OPTIONS,
        ) as address, grpc.aio.insecure_channel(address) as channel:
            echo = channel.unary_unary(f"/{SERVICE}/Echo")
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await echo(TOO_BIG, timeout=CALL_TIMEOUT,
                           metadata=(("x-request-id", "too-big"),))
            assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "x-server-request-id" not in dict(refused.value.trailing_metadata() or ())
            await log_lines.wait_for(lambda lines: bool(lines.events("request.end")))
            await echo(b"small", timeout=CALL_TIMEOUT)
            await log_lines.wait_for(lambda lines: len(lines.events("request.end")) == 2)

    asyncio.run(go())
    assert len(log_lines.events("request.start")) == 2
    refused, served = log_lines.events("request.end")
    assert (refused["x_request_id"], refused["outcome"]) == ("too-big", "cancelled")
    assert refused["error"] == NEVER_HANDLED_ERROR and "grpc_status" not in refused
    assert served["grpc_status"] == "OK"


def test_an_oversized_message_ends_a_sync_request_stream_recorded_cancelled(
    log_lines: LogLines,
) -> None:
    pool = futures.ThreadPoolExecutor(2)
    server = grpc.server(pool, interceptors=[RequestTracingInterceptor()], options=OPTIONS)
    methods = {"Count": grpc.stream_unary_rpc_method_handler(_count_then_wait)}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, methods),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            with pytest.raises(grpc.RpcError) as refused:
                channel.stream_unary(f"/{SERVICE}/Count")(
                    iter([b"a", TOO_BIG, b"c"]), timeout=CALL_TIMEOUT
                )
            assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            _wait_until(lambda: bool(log_lines.events("request.end")))
    finally:
        server.stop(None)
        pool.shutdown(wait=False, cancel_futures=True)
    (end,) = log_lines.events("request.end")
    assert (end["grpc_status"], end["outcome"], end["messages_in"]) == ("CANCELLED", "cancelled", 1)


