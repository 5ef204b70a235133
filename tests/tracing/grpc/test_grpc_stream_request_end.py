"""A request of a bidirectional stream ends when the handler, having answered it, asks
for the next one, not when the next one arrives.

Before, it stayed open through the client's pause: its span lasted as long as the
client waited before its next request, and a stream cancelled meanwhile (tritonclient's
``stop_stream(cancel_requests=True)``, an aio client closed with its stream open)
recorded the request it had been answered as ``CANCELLED`` / ``cancelled``.
"""

from __future__ import annotations

import asyncio
import queue
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import grpc.aio
from loguru import logger

from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, serving
from tests.tracing.grpc.test_grpc_sync_server import traced_sync_server

CALL_TIMEOUT = 30.0
# Far inside the call's deadline, which would end the stream, and the request with it.
WAIT = 5.0
WAITING = "answered, waiting for the next request"


async def _chat_aio(requests: AsyncIterator[bytes], context: Any) -> AsyncIterator[bytes]:
    async for request in requests:
        yield b"answer " + request
        logger.info(WAITING)


def _chat_sync(requests: Iterator[bytes], context: Any) -> Iterator[bytes]:
    for request in requests:
        yield b"answer " + request
        logger.info(WAITING)


def _generic(behavior: Any) -> grpc.GenericRpcHandler:
    return grpc.method_handlers_generic_handler(
        "probe.Chat", {"Talk": grpc.stream_stream_rpc_method_handler(behavior)}
    )


def _check(log_lines: LogLines) -> None:
    # Not the call's status: a cancel while the handler waits for a request message may
    # end its request iterator as if the client had closed its stream, on both servers,
    # and a handler that returns at once races it (docs/grpc.md). Its request's end
    # does not.
    (_call_end,) = [x for x in log_lines.events("request.end") if "stream_index" not in x]
    (item_end,) = log_lines.events("request.end", stream_index=0)
    assert item_end["outcome"] == "ok"
    (waiting,) = [x for x in log_lines.lines if x["message"] == WAITING]
    # Still the answered request's line; it ended right after, before the cancel.
    assert waiting["request_id"] == item_end["request_id"]
    assert log_lines.lines.index(waiting) < log_lines.lines.index(item_end)


def test_a_request_answered_before_the_stream_was_cancelled_ended_ok_on_grpc_aio(
    log_lines: LogLines,
) -> None:
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
            # Ended while the client holds its next request back, not when it sends it.
            await log_lines.wait_for(lambda lines: bool(lines.events("request.end")), timeout=WAIT)
            call.cancel()
            await log_lines.wait_for(lambda lines: len(lines.events("request.end")) == 2)

    asyncio.run(run())
    _check(log_lines)


def test_a_request_answered_before_the_stream_was_cancelled_ended_ok_on_grpc_server(
    log_lines: LogLines,
) -> None:
    pending: queue.Queue[bytes | None] = queue.Queue()

    def requests() -> Iterator[bytes]:
        while (item := pending.get(timeout=CALL_TIMEOUT)) is not None:
            yield item

    def wait_until(predicate: Any) -> None:
        deadline = time.monotonic() + WAIT
        while not predicate():
            assert time.monotonic() < deadline, "condition never held"
            time.sleep(0.01)

    with traced_sync_server(
        lambda s: s.add_generic_rpc_handlers((_generic(_chat_sync),)), workers=2
    ) as channel:
        call = channel.stream_stream("/probe.Chat/Talk")(requests(), timeout=CALL_TIMEOUT)
        pending.put(b"a")
        assert next(call) == b"answer a"
        wait_until(lambda: bool(log_lines.events("request.end")))  # as on grpc.aio
        call.cancel()
        wait_until(lambda: len(log_lines.events("request.end")) == 2)
        pending.put(None)
    _check(log_lines)
