"""Request messages as an ``async`` handler reads them: counted, and in a bidirectional
stream handed to the call to become requests of their own (`GrpcCall.next_item`)."""

from __future__ import annotations

from typing import Any

from ridtrace.tracing.grpc.call import GrpcCall
from ridtrace.tracing.grpc.context import TracedServicerContext

__all__ = ["count_requests"]


def count_requests(call: GrpcCall, request: Any, streaming: bool, per_message: bool) -> Any:
    """The request as the handler sees it: streams counted (and, per message, identified)."""
    context = call.context
    if per_message:
        context.on_message = call.next_item
        context.on_read = call.end_item
    if streaming:
        return _CountingIterator(request, context)
    context.messages_in = 1
    return request


class _CountingIterator:
    """Counts request messages as the handler consumes them (class, not generator:
    nothing to finalise if the handler stops early)."""

    __slots__ = ("_context", "_iterator", "_source")

    def __init__(self, source: Any, context: TracedServicerContext) -> None:
        # grpc.aio's receiver creates its coroutine in __aiter__: asked for only when
        # the handler reads, so one that never does (an unknown method's) leaves no
        # "coroutine was never awaited" warning behind.
        self._source = source
        self._iterator: Any = None
        self._context = context

    def __aiter__(self) -> _CountingIterator:
        return self

    async def __anext__(self) -> Any:
        if self._iterator is None:
            self._iterator = self._source.__aiter__()
        context = self._context
        if context.on_read is not None:
            context.on_read()
        try:
            message = await self._iterator.__anext__()
        except StopAsyncIteration:
            context.requests_ended = True
            raise
        context.messages_in += 1
        if context.on_message is not None:
            context.on_message(message)
        return message
