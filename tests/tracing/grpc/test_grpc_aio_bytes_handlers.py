"""grpc.aio handlers without serializers (bytes handlers, as docs/grpc.md's examples
are written) that return or yield something gRPC cannot send raw (an int, a
bytearray): grpc.aio fails the call ``UNKNOWN`` ("Expected bytes, got int").

ridtrace recorded the unary call ``OK`` / ``ok`` and the stream ``CANCELLED`` /
``cancelled`` (gRPC drops a stream whose message it refused as a client's cancel
leaves it), as it did for a serializer's refusal before ridtrace answered that itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import grpc.aio

from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, service_of, serving

CALL_TIMEOUT = 30.0


async def _returns_a_bytearray(request: bytes, context: Any) -> Any:
    return bytearray(b"not bytes to grpc.aio")


async def _yields_an_int(request: bytes, context: Any) -> AsyncIterator[Any]:
    yield b"first"
    yield 42


async def _returns_text(request: bytes, context: Any) -> Any:
    return "text"  # grpc.aio encodes a str: sent


def test_a_raw_response_grpc_aio_refuses_is_recorded_as_the_client_got_it(
    log_lines: LogLines,
) -> None:
    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(_returns_a_bytearray),
        "Stream": grpc.unary_stream_rpc_method_handler(_yields_an_int),
        "Text": grpc.unary_unary_rpc_method_handler(_returns_text),
    }

    async def run() -> tuple[grpc.StatusCode, grpc.StatusCode, list[bytes], bytes]:
        async with (
            serving(service_of(handlers), interceptors=[RequestTracingInterceptor()]) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            try:
                await channel.unary_unary("/t.S/Unary")(b"", timeout=CALL_TIMEOUT)
                unary = grpc.StatusCode.OK
            except grpc.aio.AioRpcError as error:
                unary = error.code()
            received: list[bytes] = []
            try:
                async for message in channel.unary_stream("/t.S/Stream")(
                    b"", timeout=CALL_TIMEOUT
                ):
                    received.append(message)
                stream = grpc.StatusCode.OK
            except grpc.aio.AioRpcError as error:
                stream = error.code()
            text = await channel.unary_unary("/t.S/Text")(b"", timeout=CALL_TIMEOUT)
            await log_lines.wait_for(lambda lines: len(lines.events("request.end")) == 3)
        return unary, stream, received, text

    unary, stream, received, text = asyncio.run(run())
    assert (unary, stream, received, text) == (
        grpc.StatusCode.UNKNOWN, grpc.StatusCode.UNKNOWN, [b"first"], b"text"
    )
    (unary_end,) = log_lines.events("request.end", rpc_method="/t.S/Unary")
    assert (unary_end["grpc_status"], unary_end["outcome"], unary_end["level"]) == (
        "UNKNOWN", "error", "WARN"
    )
    assert "returned a bytearray" in unary_end["error"]
    (stream_end,) = log_lines.events("request.end", rpc_method="/t.S/Stream")
    assert (stream_end["grpc_status"], stream_end["outcome"], stream_end["messages_out"]) == (
        "UNKNOWN", "error", 1
    )
    assert "yielded an int" in stream_end["error"]
    (text_end,) = log_lines.events("request.end", rpc_method="/t.S/Text")
    assert (text_end["grpc_status"], text_end["outcome"]) == ("OK", "ok")
