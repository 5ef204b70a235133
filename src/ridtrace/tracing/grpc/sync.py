"""The interceptor's rules on a synchronous ``grpc.server``: same identity, span, lines.

A synchronous server calls ``intercept_service`` without awaiting it and runs each
handler in a thread of its pool, from start to end (streamed responses included), so
the request context set in that thread holds for every log line the handler writes
there. The call's state lives in :class:`~ridtrace.tracing.grpc.call.GrpcCall`, as on
``grpc.aio``; this module only adapts the handler shapes (the servicer context is in
:mod:`ridtrace.tracing.grpc.sync_context`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import grpc

from ridtrace.tracing.context import forget_escape, remember_on_exception
from ridtrace.tracing.grpc.call import GrpcCall
from ridtrace.tracing.grpc.call_config import CallConfig
from ridtrace.tracing.grpc.method import MethodInfo, behavior_of
from ridtrace.tracing.grpc.status import CallEnded, RequestUndecodable, deadline_passed
from ridtrace.tracing.grpc.sync_context import SyncTracedServicerContext
from ridtrace.tracing.grpc.undecodable import (
    Undecodable,
    answer_undecodable,
    answer_unserializable,
    end_as_refused,
    nothing_to_send,
    refuse_unsendable,
    refused_by_grpc,
    tolerant_deserializer,
)
from ridtrace.tracing.lifecycle import running_in_threads

__all__ = ["SyncTracedServicerContext", "wrap_sync_handler"]


def wrap_sync_handler(
    handler: grpc.RpcMethodHandler,
    info: MethodInfo,
    config: CallConfig,
    *,
    initial: str,
    per_message: bool,
) -> grpc.RpcMethodHandler:
    """``handler`` with each call traced; its shape (value or iterator) is kept."""
    behavior, factory = behavior_of(handler)
    streaming_in = bool(handler.request_streaming)
    per_message = per_message and streaming_in and bool(handler.response_streaming)
    if handler.response_streaming:
        new = _traced_stream(
            behavior, info, config, streaming_in, per_message, initial,
            handler.response_serializer,
        )
    else:
        new = _traced_unary(
            behavior, info, config, streaming_in, initial, handler.response_serializer
        )
    keep_thread_pool(new, behavior)
    return factory(
        new,
        request_deserializer=tolerant_deserializer(handler),
        response_serializer=handler.response_serializer,
    )


def keep_thread_pool(traced: Callable[..., Any], behavior: Callable[..., Any]) -> None:
    """The pool a behaviour asked to run in (``experimental_thread_pool``, which the
    server reads from the handler's function): without it, the server's own."""
    pool = getattr(behavior, "experimental_thread_pool", None)
    if pool is not None:
        traced.experimental_thread_pool = pool  # type: ignore[attr-defined]


def begin_call(
    config: CallConfig, info: MethodInfo, context: grpc.ServicerContext
) -> tuple[GrpcCall, SyncTracedServicerContext]:
    call = GrpcCall(config, info, context, context_type=SyncTracedServicerContext)
    # Shutdown waits for it: the server's stop returns while its handler still unwinds.
    running_in_threads.add(call)
    traced_context = call.context
    assert isinstance(traced_context, SyncTracedServicerContext)
    return call, traced_context


def _traced_unary(
    behavior: Callable[..., Any],
    info: MethodInfo,
    config: CallConfig,
    streaming_in: bool,
    initial: str,
    serializer: Callable[[Any], bytes] | None,
) -> Callable[..., Any]:
    def traced(request: Any, context: grpc.ServicerContext) -> Any:
        call, traced_context = begin_call(config, info, context)
        failure: BaseException | None = None
        try:
            request = counted_requests(request, traced_context, streaming_in)
            if isinstance(request, Undecodable):
                answer_undecodable(request, traced_context, call.ctx.annotations, aio=False)
            result = behavior(request, traced_context)
            ended = ended_without_handler(traced_context)
            if ended is not None:
                # A synchronous server never interrupts a handler: this one returned
                # after the call had ended (the client cancelled, its deadline passed,
                # or gRPC refused a request message), and the client got that status,
                # not this result. Recorded as such.
                failure = ended
                if isinstance(ended, RequestUndecodable):
                    end_as_refused(traced_context)
                return result
            refused = nothing_to_send(result, serializer, traced_context, aio=False)
            if refused is not None:
                answer_unserializable(
                    refused, result, traced_context, call.ctx.annotations, aio=False
                )
            # A caught abort's status went out instead of the result.
            traced_context.messages_out = 0 if traced_context.aborted else 1
            if initial == "always":
                traced_context.ensure_initial_metadata()
            return result
        except BaseException as exc:
            failure = failure_of(exc, traced_context, call)
            raise
        finally:
            call.finish(failure)

    return traced


def _traced_stream(
    behavior: Callable[..., Any],
    info: MethodInfo,
    config: CallConfig,
    streaming_in: bool,
    per_message: bool,
    initial: str,
    serializer: Callable[[Any], bytes] | None,
) -> Callable[..., Any]:
    def traced(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        call, traced_context = begin_call(config, info, context)
        if per_message:
            traced_context.on_message = call.next_item
            traced_context.on_read = call.end_item
        failure: BaseException | None = None
        responses: Any = None
        try:
            request = counted_requests(request, traced_context, streaming_in)
            if isinstance(request, Undecodable):
                answer_undecodable(request, traced_context, call.ctx.annotations, aio=False)
            responses = behavior(request, traced_context)
            for message in responses:
                if message is None:
                    # A synchronous server ends the call there, OK, and leaves the rest
                    # of the handler's stream unread: end it so, as gRPC would have
                    # (a serializer asked about None refused it: INTERNAL; yielded on,
                    # the abandoned stream was recorded as a client's cancel).
                    break
                refuse_unsendable(  # gRPC's own refusal would look like a client's cancel
                    message, serializer, traced_context, call.ctx.annotations, aio=False
                )
                if initial != "never" and not traced_context.initial_sent:
                    traced_context.ensure_initial_metadata()
                yield message
                # Counted once resumed: the server asks for the next message only after
                # it sent this one, and drops one that comes after the call ended (a
                # handler it never interrupts) unsent, closing the stream here.
                traced_context.messages_out += 1
            failure = ended_without_handler(traced_context)  # see _traced_unary
            if isinstance(failure, RequestUndecodable):
                end_as_refused(traced_context)
        except BaseException as exc:
            failure = failure_of(exc, traced_context, call)
            raise
        finally:
            try:
                # The handler's own cleanup runs before request.end, in this thread.
                close = getattr(responses, "close", None)
                if close is not None:
                    close()
            finally:
                call.finish(failure)

    return traced


def failure_of(
    exc: BaseException, context: SyncTracedServicerContext, call: GrpcCall
) -> BaseException:
    """What a call is finished with when ``exc`` escaped its handler.

    When the call had already ended, the client got CANCELLED / DEADLINE_EXCEEDED
    whatever escaped: most often the bare ``grpc.RpcError`` the server's request
    iterator raises then, which is no fault of the server's. After gRPC refused a
    request message the client got INTERNAL, whatever the handler did next.
    """
    if isinstance(exc, Exception):
        forget_once_logged(exc, context, call)
    if context.request_undecodable:
        ended: BaseException = RequestUndecodable()
    elif isinstance(exc, GeneratorExit) or context.aborted or not _call_ended(context):
        return exc
    else:
        ended = CallEnded()
    if isinstance(exc, Exception):
        # gRPC still logs the handler's own exception ("Exception calling
        # application: ...") once the call's context is gone: the ids travel on it,
        # as on any crash (GrpcCall.finish only sees what the call is finished with).
        remember_on_exception(exc, call.ctx)
    return ended


def forget_once_logged(
    exc: BaseException, context: SyncTracedServicerContext, call: GrpcCall
) -> None:
    """Forget where ``exc`` escaped (remembered as the call finishes) once the call has
    ended: gRPC ends it by sending the status it writes its crash line before, in the
    thread the handler ran in. A call already over takes no callback (gRPC logs after
    it): that escape stays remembered."""
    with contextlib.suppress(Exception):  # telemetry never fails a call
        context.add_callback(functools.partial(forget_escape, exc, call.ctx))


def ended_without_handler(context: SyncTracedServicerContext) -> BaseException | None:
    """What a call the handler returned from is finished with: ``None`` when the
    handler's result is what the client got."""
    if context.request_undecodable:
        return RequestUndecodable()
    if _call_ended(context):
        return CallEnded()
    return None


def _call_ended(context: SyncTracedServicerContext) -> bool:
    """The call ended without the handler: the client cancelled, or its deadline passed.

    The deadline is read too: when it passes, the server's request iterator may end as
    if the client had closed its stream before the server has seen the call end.
    """
    return not context.is_active() or deadline_passed(context)


def counted_requests(request: Any, context: SyncTracedServicerContext, streaming: bool) -> Any:
    if not streaming:
        context.messages_in = 1
        return request
    return _CountingIterator(request, context)


class _CountingIterator:
    """Counts (and, in a bidirectional stream, identifies) request messages as the
    handler reads them."""

    __slots__ = ("_context", "_source")

    def __init__(self, source: Iterable[Any], context: SyncTracedServicerContext) -> None:
        self._source = iter(source)
        self._context = context

    def __iter__(self) -> _CountingIterator:
        return self

    def __next__(self) -> Any:
        if self._context.on_read is not None:
            self._context.on_read()
        try:
            message = next(self._source)
        except StopIteration:
            if refused_by_grpc(self._context):
                self._context.request_undecodable = True
            raise
        context = self._context
        context.messages_in += 1
        if context.on_message is not None:
            context.on_message(message)
        return message
