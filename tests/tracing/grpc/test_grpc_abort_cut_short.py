"""A call cancelled while its abort's status goes out is recorded with the abort's code.

grpc.aio's ``abort()`` hands the status to gRPC, awaits its sending, then raises
``AbortError``. A cancel in between (the event loop ending once the client had the
status and the server had stopped: ``asyncio.run`` cancels the tasks left; seen in CI
with OpenTelemetry's interceptor in front, whose context wrapper adds a step there)
reached ridtrace as a ``CancelledError`` instead, and the call was recorded
``CANCELLED`` while its client had got the abort's code.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import grpc.aio

from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, service_of, serving

CALL_TIMEOUT = 30.0


class _AbortThatLingers:
    """A servicer context whose ``abort()`` lingers after gRPC took the status, until
    the call is cancelled: the window a wrapper in front of ridtrace's widens."""

    def __init__(self, inner: Any, lingering: asyncio.Event) -> None:
        self._inner = inner
        self._lingering = lingering

    async def abort(self, code: grpc.StatusCode, details: str = "",
                    trailing_metadata: Any = ()) -> None:
        try:
            await self._inner.abort(code, details, trailing_metadata)
        except grpc.aio.AbortError:
            self._lingering.set()
            await asyncio.Event().wait()  # until the call is cancelled
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _LingeringAborts(grpc.aio.ServerInterceptor):
    """An interceptor in front of ridtrace's that hands on `_AbortThatLingers`."""

    def __init__(self) -> None:
        self.lingering = asyncio.Event()

    async def intercept_service(self, continuation: Any, details: Any) -> Any:
        handler = await continuation(details)
        behavior = handler.unary_unary

        async def lingering(request: Any, context: Any) -> Any:
            return await behavior(request, _AbortThatLingers(context, self.lingering))

        return grpc.unary_unary_rpc_method_handler(
            lingering, request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer)


async def _not_found(request: bytes, context: Any) -> bytes:
    await context.abort(grpc.StatusCode.NOT_FOUND, "no such item")
    raise AssertionError("abort returned")


def test_a_call_cancelled_while_its_abort_goes_out_keeps_the_aborts_code(
    log_lines: LogLines,
) -> None:
    handlers = {"Get": grpc.unary_unary_rpc_method_handler(_not_found)}

    async def run() -> grpc.StatusCode:
        front = _LingeringAborts()
        async with serving(service_of(handlers),
                           interceptors=[front, RequestTracingInterceptor()]) as target:
            async with grpc.aio.insecure_channel(target) as channel:
                call = channel.unary_unary("/t.S/Get")(b"", timeout=CALL_TIMEOUT)
                try:
                    await call
                except grpc.aio.AioRpcError as error:
                    code = error.code()
            await front.lingering.wait()
            assert not log_lines.events("request.end")  # the call is still in abort()
        # asyncio.run's end cancels it there (grpc.aio's stop leaves a call whose
        # status went out to finish).
        return code

    assert asyncio.run(run()) is grpc.StatusCode.NOT_FOUND
    (end,) = log_lines.events("request.end")
    assert (end["grpc_status"], end["outcome"], end["messages_out"]) == ("NOT_FOUND", "ok", 0)
