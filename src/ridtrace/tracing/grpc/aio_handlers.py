"""The traced forms of a ``grpc.aio`` handler's behaviour, one per shape gRPC drives.

grpc.aio picks how to drive a handler from its shape (coroutine function, async
generator function), so each wrapper keeps the shape of the behaviour it wraps.
:class:`~ridtrace.tracing.grpc.interceptor.RequestTracingInterceptor` picks which.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

import grpc.aio

from ridtrace.tracing.context import serve_in_this_task
from ridtrace.tracing.grpc.call import GrpcCall
from ridtrace.tracing.grpc.call_config import CallConfig
from ridtrace.tracing.grpc.counting import count_requests
from ridtrace.tracing.grpc.method import MethodInfo
from ridtrace.tracing.grpc.status import CallEnded, ended_under_handler, escaped
from ridtrace.tracing.grpc.undecodable import (
    Undecodable,
    answer_undecodable,
    answer_unserializable,
    note_refused_write,
    nothing_to_send,
    refuse_unsendable,
)
from ridtrace.tracing.grpc.unstarted import handler_running

Behavior = Callable[..., Any]


def traced_coroutine(
    behavior: Behavior,
    info: MethodInfo,
    config: CallConfig,
    *,
    initial: Literal["streaming", "always", "never"],
    request_streaming: bool,
    response_streaming: bool,
    per_message: bool,
    serializer: Callable[[Any], bytes] | None,
) -> Behavior:
    """Unary responses, and streaming ones written with ``context.write()``."""
    send_initial = initial == "always" and not response_streaming
    write_sends_initial = initial != "never"

    async def traced(request: Any, context: grpc.aio.ServicerContext) -> Any:
        handler_running()
        call = GrpcCall(config, info, context)
        serve_in_this_task(call.ctx)  # grpc.aio's lines after the handler: the call's
        traced_context = call.context
        traced_context.write_sends_initial = write_sends_initial
        failure: BaseException | None = None
        try:
            request = count_requests(call, request, request_streaming, per_message)
            if isinstance(request, Undecodable):
                answer_undecodable(request, traced_context, call.ctx.annotations, aio=True)
            result = await behavior(request, traced_context)
            if ended_under_handler(traced_context):
                failure = CallEnded()  # the client got the call's end (CallEnded)
                return result
            if not response_streaming:
                refused = nothing_to_send(result, serializer, traced_context, aio=True)
                if refused is not None:
                    answer_unserializable(
                        refused, result, traced_context, call.ctx.annotations, aio=True
                    )
                # A caught abort's status went out instead of the result.
                traced_context.messages_out = 0 if traced_context.aborted else 1
                if send_initial:
                    await traced_context.ensure_initial_metadata()
            return result
        except BaseException as exc:
            note_refused_write(traced_context, exc, serializer, call.ctx.annotations)
            failure = escaped(exc, call.ctx)
            raise
        finally:
            call.finish(failure)

    return traced


def traced_generator(
    behavior: Behavior,
    info: MethodInfo,
    config: CallConfig,
    *,
    send_initial: bool,
    request_streaming: bool,
    per_message: bool,
    serializer: Callable[[Any], bytes] | None,
) -> Behavior:
    """Streaming responses written as an async generator."""

    async def traced(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        handler_running()
        call = GrpcCall(config, info, context)
        serve_in_this_task(call.ctx)  # grpc.aio's lines after the handler: the call's
        traced_context = call.context
        failure: BaseException | None = None
        responses: Any = None
        try:
            request = count_requests(call, request, request_streaming, per_message)
            if isinstance(request, Undecodable):
                answer_undecodable(request, traced_context, call.ctx.annotations, aio=True)
            responses = behavior(request, traced_context)
            async for message in responses:
                refuse_unsendable(  # gRPC's own refusal would look like a client's cancel
                    message, serializer, traced_context, call.ctx.annotations, aio=True
                )
                if send_initial and not traced_context.initial_sent:
                    await traced_context.ensure_initial_metadata()
                yield message
                # Counted once resumed: grpc.aio asks for the next once this one went.
                traced_context.messages_out += 1
            if ended_under_handler(traced_context):
                failure = CallEnded()  # the client got the call's end (CallEnded)
        except BaseException as exc:
            note_refused_write(traced_context, exc, serializer, call.ctx.annotations)
            failure = escaped(exc, call.ctx)
            raise
        finally:
            try:
                # Close the handler's generator here, in this task, so its own
                # cleanup (an in-flight registry release) runs before request.end
                # instead of whenever the garbage collector gets to it.
                if responses is not None:
                    await responses.aclose()
            finally:
                call.finish(failure)

    return traced
