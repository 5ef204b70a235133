"""Streams a synchronous ``grpc.server`` answers through a callback, not a thread.

A response-streaming behaviour marked ``experimental_non_blocking`` (grpcio-health-
checking's ``HealthServicer.Watch``, by default) is called with a third argument,
``send_response_callback``, registers it and returns at once; whoever holds the
callback sends each response through it later, from any thread, and ends the call
with ``None``. Such a stream holds no thread of the server's pool while it is open.

Wrapped like a generator handler, the behaviour was called without the callback and
fell back to a blocking iterator: every open ``Watch`` held a pool thread, and as many
watches as the pool has threads left no thread for any other call (a ``Check``, the
probe that keeps the pod alive, timed out). The wrapper keeps the mark and the callback;
the call's span and ``request.end`` end when the behaviour sends ``None`` or gRPC ends
the call (the client cancelled, the server stopped), whichever comes first.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Any

import grpc

from ridtrace.tracing.grpc.call_config import CallConfig
from ridtrace.tracing.grpc.method import MethodInfo, behavior_of
from ridtrace.tracing.grpc.status import CallEnded
from ridtrace.tracing.grpc.sync import (
    begin_call,
    counted_requests,
    ended_without_handler,
    failure_of,
    keep_thread_pool,
    wrap_sync_handler,
)
from ridtrace.tracing.grpc.undecodable import (
    Undecodable,
    answer_undecodable,
    tolerant_deserializer,
    unsendable,
    unserializable_reason,
)

__all__ = ["is_non_blocking", "wrap_for_sync_server", "wrap_non_blocking_handler"]

_UNSET: Any = object()


def is_non_blocking(handler: grpc.RpcMethodHandler) -> bool:
    """Whether a synchronous server calls ``handler`` with a ``send_response_callback``
    (grpc._server checks the same attribute, on response streams only)."""
    if not handler.response_streaming:
        return False
    behavior, _ = behavior_of(handler)
    return bool(getattr(behavior, "experimental_non_blocking", False))


def wrap_for_sync_server(
    handler: grpc.RpcMethodHandler, info: MethodInfo, config: CallConfig, *, initial: str,
    per_message: bool,
) -> grpc.RpcMethodHandler:
    """A synchronous ``grpc.server``'s handler traced: plain functions and generators,
    and streams answered through a callback (``experimental_non_blocking``)."""
    if is_non_blocking(handler):
        return wrap_non_blocking_handler(handler, info, config, initial=initial)
    return wrap_sync_handler(handler, info, config, initial=initial, per_message=per_message)


def wrap_non_blocking_handler(
    handler: grpc.RpcMethodHandler, info: MethodInfo, config: CallConfig, *, initial: str
) -> grpc.RpcMethodHandler:
    """``handler`` traced, still non-blocking. One identity per call: the request
    messages of a bidirectional one are not made requests of their own (the behaviour
    may read them in any thread)."""
    behavior, factory = behavior_of(handler)
    streaming_in = bool(handler.request_streaming)
    serializer = handler.response_serializer
    # Called without the callback, the behaviour streams as a blocking iterator
    # (grpcio-health-checking's Watch does): traced then as a generator handler is.
    blocking, _ = behavior_of(
        wrap_sync_handler(handler, info, config, initial=initial, per_message=False)
    )

    def traced(request: Any, context: grpc.ServicerContext, send_response: Any = None) -> Any:
        if send_response is None:
            # An interceptor listed before ours (OpenTelemetry's) wraps the behaviour
            # in a function without the mark, so the server calls it without the
            # callback: this raised a TypeError, and every health Watch failed UNKNOWN.
            return blocking(request, context)
        # The call's ids go into a context of its own, not the pool thread's: its
        # request.end is written later, from whichever thread ends the call, there.
        ending = _Ending(contextvars.copy_context())
        try:
            ending.call_context.run(_start, request, context, send_response, ending)
        finally:
            ending.leave()
        return None

    def _start(
        request: Any,
        context: grpc.ServicerContext,
        send_response: Callable[[Any], None],
        ending: _Ending,
    ) -> None:
        call, traced_context = begin_call(config, info, context)
        ending.call = call

        def send(response: Any) -> None:
            if response is None:
                ended = ended_without_handler(traced_context)  # before the status goes
                send_response(None)
                ending.finish(ended)
                return
            refused = unsendable(response, serializer)
            if refused is not None:
                # gRPC answers INTERNAL ("Failed to serialize response!") by itself and
                # reports the call's end as any other: recorded as the client got it,
                # not as a cancel (as a generator's refused message is).
                call.ctx.annotations["error"] = unserializable_reason(refused, response, "sent")
                if traced_context.code() is None:
                    traced_context.set_code(grpc.StatusCode.INTERNAL)  # what gRPC answers
                send_response(response)
                ending.finish(None)
                return
            with ending.lock:  # responses may come from several threads at once
                traced_context.messages_out += 1
                if initial != "never":
                    traced_context.ensure_initial_metadata()  # once, before the first
            send_response(response)

        # For a behaviour that never sends None: gRPC calls this when the call ends
        # (False: it has ended already).
        registered = traced_context.add_callback(lambda: ending.finish(CallEnded()))
        try:
            request = counted_requests(request, traced_context, streaming_in)
            if isinstance(request, Undecodable):
                answer_undecodable(request, traced_context, call.ctx.annotations, aio=False)
            behavior(request, traced_context, send)
        except BaseException as exc:
            ending.finish(failure_of(exc, traced_context, call))
            raise
        if not registered:
            ending.finish(CallEnded())

    traced.experimental_non_blocking = True  # type: ignore[attr-defined]
    keep_thread_pool(traced, behavior)
    return factory(
        traced,
        request_deserializer=tolerant_deserializer(handler),
        response_serializer=handler.response_serializer,
    )


class _Ending:
    """Finishes a non-blocking call once, from whichever thread ends it, with the call's
    context current.

    The thread that began the call is inside ``call_context`` until the behaviour
    returns; a context cannot be entered twice at once, so an end that another thread
    reports meanwhile is held and finished by :meth:`leave`.
    """

    __slots__ = ("_owner", "_pending", "call", "call_context", "finished", "lock")

    def __init__(self, call_context: contextvars.Context) -> None:
        self.call_context = call_context
        self.call: Any = None
        self.lock = threading.Lock()
        self.finished = False
        self._owner: int | None = threading.get_ident()
        self._pending: Any = _UNSET

    def finish(self, failure: BaseException | None) -> None:
        with self.lock:
            if self.finished or self.call is None:
                return
            if self._owner is not None and self._owner != threading.get_ident():
                if self._pending is _UNSET:
                    self._pending = failure
                return
            self.finished = True
            inside = self._owner is not None
        if inside:
            self.call.finish(failure)
        else:
            self.call_context.run(self.call.finish, failure)

    def leave(self) -> None:
        """The thread that began the call left its context: finish what was held."""
        with self.lock:
            self._owner = None
            held = self._pending
        if held is not _UNSET:
            self.finish(held)
