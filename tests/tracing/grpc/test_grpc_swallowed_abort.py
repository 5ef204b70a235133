"""A grpc.aio handler that catches its own ``abort`` is recorded as its client saw it.

``context.abort()`` raises ``AbortError``, an ``Exception``, so an ``except Exception``
around the code that aborts catches it. gRPC has already taken the abort's status:
the client gets it, whatever the handler does next. A streaming handler that yielded
on then had its stream dropped by gRPC, and the call was recorded ``CANCELLED`` /
``cancelled``, as if its client had gone away; a unary one that returned a response
anyway was recorded as having sent it (``messages_out`` 1; the client got none).
"""

from __future__ import annotations

import asyncio
import contextlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import grpc.aio

from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, service_of, serving
from tests.tracing.grpc.test_grpc_sync_server import _wait_until

CALL_TIMEOUT = 30.0


async def _check(context: Any) -> None:
    with contextlib.suppress(Exception):  # a catch-all around code that aborts
        await context.abort(grpc.StatusCode.NOT_FOUND, "no such item")


async def _unary(request: bytes, context: Any) -> bytes:
    await _check(context)
    return b"answer"


def _sync_unary(request: bytes, context: Any) -> bytes:
    with contextlib.suppress(Exception):  # the synchronous abort raises a bare Exception
        context.abort(grpc.StatusCode.NOT_FOUND, "no such item")
    return b"answer"


async def _streaming(request: bytes, context: Any) -> Any:
    yield b"first"
    await _check(context)
    yield b"second"


def test_a_caught_abort_is_recorded_with_its_status(log_lines: LogLines) -> None:
    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(_unary),
        "Stream": grpc.unary_stream_rpc_method_handler(_streaming),
    }

    async def run() -> list[tuple[str, list[bytes], grpc.StatusCode]]:
        seen = []
        async with (
            serving(service_of(handlers), interceptors=[RequestTracingInterceptor()]) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            for method, make in (("Unary", channel.unary_unary),
                                 ("Stream", channel.unary_stream)):
                call = make(f"/t.S/{method}")(b"", timeout=CALL_TIMEOUT)
                got: list[bytes] = []
                try:
                    if method == "Unary":
                        got.append(await call)
                    else:
                        async for message in call:
                            got.append(message)
                except grpc.aio.AioRpcError as error:
                    seen.append((method, got, error.code()))
                await log_lines.wait_for(
                    lambda lines, m=method: bool(lines.events("request.end", path=f"/t.S/{m}"))
                )
        return seen

    assert asyncio.run(run()) == [
        ("Unary", [], grpc.StatusCode.NOT_FOUND),
        ("Stream", [b"first"], grpc.StatusCode.NOT_FOUND),
    ]
    (unary,) = log_lines.events("request.end", path="/t.S/Unary")
    (stream,) = log_lines.events("request.end", path="/t.S/Stream")
    assert (unary["grpc_status"], unary["outcome"], unary["messages_out"]) == (
        "NOT_FOUND", "ok", 0
    )
    assert (stream["grpc_status"], stream["outcome"]) == ("NOT_FOUND", "ok")


def test_a_caught_abort_on_a_synchronous_server_sent_no_message(log_lines: LogLines) -> None:
    server = grpc.server(ThreadPoolExecutor(2), interceptors=[RequestTracingInterceptor()])
    service_of({"Unary": grpc.unary_unary_rpc_method_handler(_sync_unary)})(server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            try:
                channel.unary_unary("/t.S/Unary")(b"", timeout=CALL_TIMEOUT)
            except grpc.RpcError as error:
                assert error.code() is grpc.StatusCode.NOT_FOUND
    finally:
        server.stop(None)
    _wait_until(lambda: bool(log_lines.events("request.end")))
    (end,) = log_lines.events("request.end")
    assert (end["grpc_status"], end["messages_out"]) == ("NOT_FOUND", 0)
