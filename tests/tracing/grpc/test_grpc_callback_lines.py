"""A line a handler's end-of-call callback logs carries the call's ids.

``context.add_callback`` (synchronous server) and ``context.add_done_callback``
(grpc.aio) are where a handler notices its client went away. gRPC runs them outside
the handler's context (a thread of its own; after the handler), so their lines had no
``request_id`` / ``x_request_id``, though DESIGN.md's log contract wants both on every
line written while a request is handled.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import grpc
import grpc.aio
import pytest
from loguru import logger

from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, service_of, serving
from tests.tracing.grpc.test_grpc_sync_server import _wait_until, traced_sync_server

CALL_TIMEOUT = 30.0
DEADLINE = 0.2


def _gone(lines: LogLines, where: str) -> list[dict[str, Any]]:
    return [line for line in lines.lines if line.get("message") == f"client gone ({where})"]


def _assert_carries_the_calls_ids(lines: LogLines, where: str, client_id: str) -> None:
    (gone,) = _gone(lines, where)
    (end,) = lines.events("request.end", x_request_id=client_id)
    assert (gone.get("request_id"), gone.get("x_request_id")) == (end["request_id"], client_id)


def _sync_handler(request: bytes, context: Any) -> bytes:
    ended = threading.Event()

    def gone() -> None:
        logger.warning("client gone (sync)")
        ended.set()

    if context.add_callback(gone):
        ended.wait(CALL_TIMEOUT)
    return b""


async def _aio_handler(request: bytes, context: Any) -> bytes:
    context.add_done_callback(lambda _: logger.warning("client gone (aio)"))
    await asyncio.sleep(CALL_TIMEOUT)  # cancelled at the deadline
    return b""


def test_a_sync_servers_call_end_callback_logs_with_the_calls_ids(log_lines: LogLines) -> None:
    def add(server: grpc.Server) -> None:
        handler = grpc.unary_unary_rpc_method_handler(_sync_handler)
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("t.S", {"Wait": handler}),)
        )

    with traced_sync_server(add, workers=2) as channel, pytest.raises(grpc.RpcError):
        channel.unary_unary("/t.S/Wait")(
            b"", timeout=DEADLINE, metadata=(("x-request-id", "sync-caller"),)
        )
    _wait_until(lambda: bool(_gone(log_lines, "sync") and log_lines.events("request.end")))
    _assert_carries_the_calls_ids(log_lines, "sync", "sync-caller")


def test_a_grpc_aio_done_callback_logs_with_the_calls_ids(log_lines: LogLines) -> None:
    handlers = {"Wait": grpc.unary_unary_rpc_method_handler(_aio_handler)}

    async def run() -> None:
        async with (
            serving(service_of(handlers), interceptors=[RequestTracingInterceptor()]) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            with pytest.raises(grpc.aio.AioRpcError):
                await channel.unary_unary("/t.S/Wait")(
                    b"", timeout=DEADLINE, metadata=(("x-request-id", "aio-caller"),)
                )
            await log_lines.wait_for(
                lambda lines: bool(_gone(lines, "aio") and lines.events("request.end"))
            )

    asyncio.run(run())
    _assert_carries_the_calls_ids(log_lines, "aio", "aio-caller")
