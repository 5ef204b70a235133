"""grpc.aio calls whose deadline passed while the handler still ran to a normal end.

grpc.aio does not always cancel the handler's task at the deadline: a client-streaming
handler's request iterator just ends (as if the client had closed its stream), and a
handler that blocks, or swallows the cancellation, returns. The client got
DEADLINE_EXCEEDED; the call was logged ``OK`` / ``ok``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
import grpc.aio
import pytest

from tests.tracing.grpc.conftest import LogLines, service_of, traced_channel


async def _count(requests: AsyncIterator[bytes], context: Any) -> bytes:
    return str(len([r async for r in requests])).encode()


async def _blocks(request: bytes, context: Any) -> bytes:
    time.sleep(0.4)  # no await: the deadline cannot cancel it
    return b"late"


async def _chunks_then_blocks(request: bytes, context: Any) -> AsyncIterator[bytes]:
    yield b"first"
    time.sleep(0.4)


_HANDLERS = {
    "Count": grpc.stream_unary_rpc_method_handler(_count),
    "Blocks": grpc.unary_unary_rpc_method_handler(_blocks),
    "Chunks": grpc.unary_stream_rpc_method_handler(_chunks_then_blocks),
}


@pytest.mark.parametrize("method", ["Count", "Blocks", "Chunks"])
def test_a_call_past_its_deadline_is_recorded_as_the_client_saw_it(
    log_lines: LogLines, method: str
) -> None:
    async def slow_requests() -> AsyncIterator[bytes]:
        yield b"a"
        await asyncio.sleep(5)
        yield b"never"

    async def go() -> grpc.StatusCode:
        code = grpc.StatusCode.OK
        async with traced_channel(service_of(_HANDLERS), None) as channel:
            try:
                if method == "Count":
                    await channel.stream_unary("/t.S/Count")(slow_requests(), timeout=1.0)
                elif method == "Blocks":
                    await channel.unary_unary("/t.S/Blocks")(b"", timeout=0.2)
                else:
                    _ = [m async for m in channel.unary_stream("/t.S/Chunks")(b"", timeout=0.2)]
            except grpc.aio.AioRpcError as error:
                code = error.code()
            await log_lines.wait_for(lambda lines: bool(lines.events("request.end")))
            return code

    assert asyncio.run(go()) is grpc.StatusCode.DEADLINE_EXCEEDED
    (end,) = log_lines.events("request.end")
    assert (end["grpc_status"], end["outcome"]) == ("DEADLINE_EXCEEDED", "cancelled")


def test_a_request_stream_cut_short_at_its_deadline_is_not_recorded_ok(
    log_lines: LogLines,
) -> None:
    """The client's deadline ends its call a little before the server's copy of it
    passes (the server counts from when the headers arrived): the handler reads the
    request stream's end as if the client had half-closed, and returns with time left.
    That client got DEADLINE_EXCEEDED (the CI once saw ``OK`` logged under load). Here
    the client's side of it is its own cancel, 60 ms before its 1 s deadline."""

    async def cut_short() -> AsyncIterator[bytes]:
        yield b"a"
        await asyncio.sleep(5)

    async def go() -> None:
        async with traced_channel(service_of(_HANDLERS), None) as channel:
            began = time.monotonic()
            call = channel.stream_unary("/t.S/Count")(cut_short(), timeout=1.0)
            await log_lines.wait_for(lambda lines: bool(lines.events("request.start")))
            await asyncio.sleep(max(0.0, began + 0.94 - time.monotonic()))
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            await log_lines.wait_for(lambda lines: bool(lines.events("request.end")))

    asyncio.run(go())
    (end,) = log_lines.events("request.end")
    assert (end["grpc_status"], end["outcome"]) == ("DEADLINE_EXCEEDED", "cancelled")
