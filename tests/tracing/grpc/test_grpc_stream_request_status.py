"""A bidirectional stream's request has its gRPC status on its ``request.end`` line.

Each request of such a stream has its own ``request.end`` and its own span. The span
had ``rpc.grpc.status_code`` (``0`` for a request answered, the call's code for the one
the call ended on), the line had neither ``status`` nor ``grpc_status``: a search of the
logs for the calls that failed (``status != 0``, ``grpc_status = "UNAVAILABLE"``) found
the stream's own line but never the request it failed on, whose line said only
``outcome: error``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import grpc.aio
import pytest

from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, serving
from tests.tracing.grpc.test_grpc_sync_server import _wait_until, traced_sync_server

CALL_TIMEOUT = 30.0
SHED = b"shed"


async def _chat_aio(requests: AsyncIterator[bytes], context: Any) -> AsyncIterator[bytes]:
    async for request in requests:
        if request == SHED:
            context.set_code(grpc.StatusCode.UNAVAILABLE)
            return
        yield b"answer " + request


def _chat_sync(requests: Iterator[bytes], context: Any) -> Iterator[bytes]:
    for request in requests:
        if request == SHED:
            context.set_code(grpc.StatusCode.UNAVAILABLE)
            return
        yield b"answer " + request


def _generic(behavior: Any) -> grpc.GenericRpcHandler:
    return grpc.method_handlers_generic_handler(
        "probe.Chat", {"Talk": grpc.stream_stream_rpc_method_handler(behavior)}
    )


def _check(log_lines: LogLines) -> None:
    answered = log_lines.events("request.end", stream_index=0)[0]
    shed = log_lines.events("request.end", stream_index=1)[0]
    assert (answered["status"], answered["grpc_status"], answered["outcome"]) == (0, "OK", "ok")
    assert (shed["status"], shed["grpc_status"], shed["outcome"]) == (14, "UNAVAILABLE", "error")
    (call_end,) = [x for x in log_lines.events("request.end") if "stream_index" not in x]
    assert (call_end["status"], call_end["grpc_status"]) == (14, "UNAVAILABLE")


def _three_ends(lines: LogLines) -> bool:
    return len(lines.events("request.end")) == 3


def test_stream_requests_end_with_their_status_on_grpc_aio(log_lines: LogLines) -> None:
    async def run() -> None:
        async with (
            serving(
                lambda s: s.add_generic_rpc_handlers((_generic(_chat_aio),)),
                interceptors=[RequestTracingInterceptor()],
            ) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            call = channel.stream_stream("/probe.Chat/Talk")(timeout=CALL_TIMEOUT)
            await call.write(b"a")
            assert await call.read() == b"answer a"
            await call.write(SHED)
            await call.done_writing()
            assert await call.code() == grpc.StatusCode.UNAVAILABLE
            await log_lines.wait_for(_three_ends, timeout=CALL_TIMEOUT)

    asyncio.run(run())
    _check(log_lines)


def test_stream_requests_end_with_their_status_on_grpc_server(log_lines: LogLines) -> None:
    with traced_sync_server(
        lambda s: s.add_generic_rpc_handlers((_generic(_chat_sync),)), workers=2
    ) as channel:
        call = channel.stream_stream("/probe.Chat/Talk")(iter([b"a", SHED]), timeout=CALL_TIMEOUT)
        with pytest.raises(grpc.RpcError) as failed:
            list(call)
        assert failed.value.code() == grpc.StatusCode.UNAVAILABLE  # type: ignore[attr-defined]
        # The server writes the call's request.end after the client has its status.
        _wait_until(lambda: _three_ends(log_lines), timeout=CALL_TIMEOUT)
    _check(log_lines)
