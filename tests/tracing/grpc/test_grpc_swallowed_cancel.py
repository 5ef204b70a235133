"""grpc.aio handlers that catch the cancellation of a call the client cancelled and
return (a cleanup that ends in ``return``), or raise another exception (a cleanup that
fails, a library that turns the cancel into an error of its own): the client got
CANCELLED, but the handler's normal end was recorded ``OK`` / ``ok``, as if it had
answered, and its exception ``UNKNOWN`` / ``error`` with a WARN and an error span."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import grpc.aio
import pytest
from loguru import logger

from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, metadata_dict, serving

CALL_TIMEOUT = 10.0


def _handlers(entered: asyncio.Event, ending: str) -> grpc.GenericRpcHandler:
    async def wait_for_the_cancel() -> None:
        """Wait until the client cancels, then clean up: return, or fail (`ending`)."""
        entered.set()
        try:
            await asyncio.sleep(CALL_TIMEOUT)
        except asyncio.CancelledError:
            logger.info("cleaned up")
            if ending == "raise":
                raise RuntimeError("the cleanup failed") from None

    async def unary(request: bytes, context: Any) -> bytes:
        await wait_for_the_cancel()
        return b"nobody reads this"

    async def stream(request: bytes, context: Any) -> AsyncIterator[bytes]:
        yield b"first"
        await wait_for_the_cancel()

    return grpc.method_handlers_generic_handler(
        "probe.Swallow",
        {
            "Unary": grpc.unary_unary_rpc_method_handler(unary),
            "Stream": grpc.unary_stream_rpc_method_handler(stream),
        },
    )


@pytest.mark.parametrize("ending", ["return", "raise"])
@pytest.mark.parametrize(("method", "sent"), [("Unary", 0), ("Stream", 1)])
def test_a_cancel_the_handler_caught_is_recorded_as_the_clients_cancel(
    log_lines: LogLines, method: str, sent: int, ending: str
) -> None:
    async def go() -> tuple[str, grpc.StatusCode]:
        entered = asyncio.Event()
        async with (
            serving(
                lambda s: s.add_generic_rpc_handlers((_handlers(entered, ending),)),
                interceptors=[RequestTracingInterceptor()],
            ) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            if method == "Unary":
                call: Any = channel.unary_unary(f"/probe.Swallow/{method}")(
                    b"", timeout=CALL_TIMEOUT
                )
            else:
                call = channel.unary_stream(f"/probe.Swallow/{method}")(
                    b"", timeout=CALL_TIMEOUT
                )
                assert await call.read() == b"first"
            await asyncio.wait_for(entered.wait(), CALL_TIMEOUT)
            initial = metadata_dict(await call.initial_metadata()) if sent else {}
            call.cancel()
            await log_lines.wait_for(lambda lines: bool(lines.events("request.end")))
            server_id = initial["x-server-request-id"][0] if sent else ""
            return server_id, await call.code()

    server_id, code = asyncio.run(go())
    assert code is grpc.StatusCode.CANCELLED
    (end,) = log_lines.events("request.end")
    if server_id:
        assert end["request_id"] == server_id
    assert (end["grpc_status"], end["outcome"], end["level"]) == ("CANCELLED", "cancelled", "INFO")
    assert end["messages_out"] == sent
    (cleanup,) = [x for x in log_lines.lines if x["message"] == "cleaned up"]
    assert cleanup["request_id"] == end["request_id"]


def test_a_cancel_of_the_handlers_own_is_no_clients_cancel(log_lines: LogLines) -> None:
    # The handler awaited a task that something else cancelled, and let its
    # CancelledError out: grpc.aio answers such a call nothing (its client waits for its
    # deadline), and it was recorded CANCELLED / cancelled, as if the client had left.
    async def unary(request: bytes, context: Any) -> bytes:
        helper = asyncio.ensure_future(asyncio.sleep(CALL_TIMEOUT))
        asyncio.get_running_loop().call_soon(helper.cancel)
        await helper
        return b"never"

    handlers = grpc.method_handlers_generic_handler(
        "probe.Own", {"Unary": grpc.unary_unary_rpc_method_handler(unary)})

    async def go() -> grpc.StatusCode:
        async with (
            serving(lambda server: server.add_generic_rpc_handlers((handlers,)),
                    interceptors=[RequestTracingInterceptor()]) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            call = channel.unary_unary("/probe.Own/Unary")(b"", timeout=1.0)
            with pytest.raises(grpc.aio.AioRpcError):
                await call
            await log_lines.wait_for(lambda lines: len(lines.events("request.end")) == 1)
            return await call.code()

    assert asyncio.run(go()) is grpc.StatusCode.DEADLINE_EXCEEDED  # no answer came
    (end,) = log_lines.events("request.end")
    assert (end["grpc_status"], end["outcome"], end["level"]) == ("UNKNOWN", "error", "WARN")
