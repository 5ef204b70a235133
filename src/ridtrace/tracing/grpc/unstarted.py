"""grpc.aio calls that end before their handler runs, recorded from what the interceptor saw.

grpc.aio runs the interceptors, then reads a unary request's message, then calls the
handler. A call whose deadline passes, or whose client cancels, while it waits between
the two (an event loop busy with other calls: the usual overload) is dropped there, as
is one the server's ``maximum_concurrent_rpcs`` refuses: its handler, and ridtrace's
wrapper of it, never run. Such calls left no id, line, span nor count, and under load
they were most of the failures (170 of 200 calls in one test, the client's
``DEADLINE_EXCEEDED`` all unseen on the server).

The interceptor, run in gRPC's task for the call, notes the call before the lookup
(:func:`watch_call`), the wrapper says it ran (:func:`handler_running`), and the task's
end records a call whose handler never did, with the metadata the interceptor was
given. Only in that task: an interceptor listed before ridtrace's that awaits the rest
in a task of its own (``asyncio.wait_for`` on Python 3.11, ``gather``) runs ridtrace's
there, a task that ends with the lookup, and every call was recorded twice.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Mapping
from typing import Any

import grpc

from ridtrace.tracing.grpc.call import GrpcCall
from ridtrace.tracing.grpc.call_config import CallConfig
from ridtrace.tracing.grpc.lookup_failed import served_as
from ridtrace.tracing.grpc.method import MethodInfo
from ridtrace.tracing.grpc.status import NeverHandled

__all__ = ["Awaited", "handler_running", "watch_call"]


class Awaited:
    """One call the interceptor saw, until its handler runs (or it is known untraced)."""

    __slots__ = ("arrived", "config", "info", "metadata", "method", "running", "served")

    def __init__(self, config: CallConfig, details: grpc.HandlerCallDetails,
                 served: Mapping[str, Any]) -> None:
        self.arrived = (time.perf_counter(), time.time_ns())
        self.config = config
        self.method: str = details.method
        self.metadata = details.invocation_metadata or ()
        # The interceptor's methods (`lookup_failed.served_as`), to name a call that
        # ended during the lookup; once it returned, the method as it names it.
        self.served = served
        self.info: MethodInfo | None = None
        self.running = False

    def ended(self, _task: object) -> None:
        if not self.running:
            info = self.info or served_as(self.method, self.served)
            call = GrpcCall(self.config, info, _NoServicerContext(self.metadata),
                            arrived=self.arrived)
            call.finish(NeverHandled())


_awaited: contextvars.ContextVar[Awaited | None] = contextvars.ContextVar(
    "ridtrace_grpc_awaited", default=None
)
# The coroutine of the task grpc.aio runs each call in (grpcio 1.85's
# ``_handle_exceptions``, wrapping ``_handle_rpc``). Another name (another grpcio) only
# means such calls go unrecorded, as before ridtrace watched for them.
_CALL_TASK_COROUTINE = "_handle_exceptions"


def watch_call(
    config: CallConfig, details: grpc.HandlerCallDetails, served: Mapping[str, Any]
) -> Awaited | None:
    """Record the call at its task's end unless its handler runs (`handler_running`).

    Called by the interceptor before the lookup; None outside gRPC's task for the call.
    """
    task = asyncio.current_task()
    if task is None or getattr(task.get_coro(), "__name__", None) != _CALL_TASK_COROUTINE:
        return None
    awaited = Awaited(config, details, served)
    _awaited.set(awaited)  # the task's context: the handler, called later, sees it
    # Recorded in a context of its own: the task's may still hold what its code set.
    task.add_done_callback(awaited.ended, context=contextvars.Context())
    return awaited


def handler_running() -> None:
    """The wrapper of the call's handler runs: the call is recorded as any other."""
    awaited = _awaited.get()
    if awaited is not None:
        awaited.running = True


class _NoServicerContext:
    """The servicer context a call that never reached its handler lacks: the metadata
    the interceptor saw, and nothing sent (the client's status was gRPC's own)."""

    def __init__(self, metadata: tuple[Any, ...]) -> None:
        self._metadata = metadata

    def invocation_metadata(self) -> tuple[Any, ...]:
        return self._metadata

    def set_trailing_metadata(self, _metadata: Any) -> None:
        return None

    def peer(self) -> None:
        return None

    def time_remaining(self) -> None:
        return None

    def code(self) -> None:
        return None
