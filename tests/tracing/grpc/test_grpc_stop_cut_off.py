"""Calls serve_until_signalled's stop cuts off at the end of its grace period.

gRPC cancels them, and the handler sees what a client's cancel looks like, but the
client got UNAVAILABLE ("Cancelling all calls"): the server ended the call. They were
recorded CANCELLED / cancelled, blaming the client; HTTP requests ``ridtrace serve``
ends at shutdown are outcome ``error``.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator

import grpc
import grpc.aio

from ridtrace.tracing.grpc import RequestTracingInterceptor, serve_until_signalled
from tests.tracing.grpc.conftest import LogLines

SERVICE = "probe.Stop"
CALL_TIMEOUT = 10.0


def test_calls_cut_off_by_the_stop_are_recorded_unavailable_not_cancelled(
    log_lines: LogLines,
) -> None:
    handlers_started = 0
    started = asyncio.Event()

    async def hang(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        nonlocal handlers_started
        handlers_started += 1
        if handlers_started == 2:
            started.set()
        await asyncio.Event().wait()  # outlives the grace period
        raise AssertionError("unreachable")

    async def trickle(request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
        yield b"first"
        await hang(request, context)

    methods = {
        "Hang": grpc.unary_unary_rpc_method_handler(hang),
        "Trickle": grpc.unary_stream_rpc_method_handler(trickle),
    }

    async def go() -> tuple[list[grpc.StatusCode], list[grpc.StatusCode]]:
        server = grpc.aio.server(interceptors=[RequestTracingInterceptor()])
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE, methods),)
        )
        port = server.add_insecure_port("127.0.0.1:0")
        serving = asyncio.ensure_future(
            serve_until_signalled(server, grace=0.2, signals=(signal.SIGUSR1,))
        )
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            unary = channel.unary_unary(f"/{SERVICE}/Hang")(b"", timeout=CALL_TIMEOUT)
            stream = channel.unary_stream(f"/{SERVICE}/Trickle")(b"", timeout=CALL_TIMEOUT)
            assert await stream.read() == b"first"
            await asyncio.wait_for(started.wait(), CALL_TIMEOUT)
            os.kill(os.getpid(), signal.SIGUSR1)
            await asyncio.wait_for(serving, CALL_TIMEOUT)
            return [await unary.code(), await stream.code()], []

    codes, _ = asyncio.run(go())
    assert codes == [grpc.StatusCode.UNAVAILABLE] * 2
    ends = log_lines.events("request.end")
    assert len(ends) == 2
    for end in ends:
        assert (end["grpc_status"], end["status"], end["outcome"], end["level"]) == (
            "UNAVAILABLE", 14, "error", "WARN",
        ), end
