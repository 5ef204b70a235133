"""Per-request identity held in context variables.

This module holds ridtrace's per-request state: one ContextVar holding the context of
the request being handled (the rest of its module-level state is per process by nature:
a warning given once, the instruments, the providers it configured). The middleware (and
the gRPC interceptor) set it with a token and reset it in ``finally``, so nothing leaks
into the next request on the same connection, while tasks spawned inside a request
inherit a copy and keep the ids.
A second one names the request a grpc.aio call's own task serves, for the lines gRPC
writes there after the call's context was reset (see `serve_in_this_task`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import weakref
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable

    from opentelemetry.trace import Span

T = TypeVar("T")

__all__ = [
    "RequestContext",
    "annotate_request",
    "annotate_span",
    "current_context",
    "current_request_id",
    "current_x_request_id",
]


@dataclass(slots=True)
class RequestContext:
    """Identity of one request, shared by every log line and span written for it.

    Mutable on purpose: route handlers learn a client id from the body (native generate
    routes) or attach fingerprints after the middleware created the context, and
    streaming bodies run in child tasks that hold the same object.
    """

    request_id: str
    trace_id: str
    span_id: str
    x_request_id: str | None = None
    parent_span_id: str | None = None
    annotations: dict[str, Any] = field(default_factory=dict)
    # The request's server span — ours, or the one FastAPI / an instrumentation opened.
    # Handlers must not use trace.get_current_span() for request-level attributes: with
    # FastAPI's telemetry that is an operation span ("fastapi.endpoint"), not the request.
    server_span: Span | None = None
    # The deprecated id headers the request sent, comma-separated (`request.start`'s
    # `deprecated_headers`), for lines of its own a service writes in place of the
    # middleware's (a worker's `worker.start`).
    deprecated_headers: str | None = None
    # The id the response's server-id header names when it is not the minted one: a
    # worker answers its hop under the frontend request's id, the one its lines carry.
    answered_as: str | None = None


_current: ContextVar[RequestContext | None] = ContextVar("ridtrace_request", default=None)
# The request a grpc.aio call's task serves. Set once when the call starts and left set,
# unlike _current: grpc.aio logs about the call in its task after the handler ended and
# _current was reset (its DEBUG "RPC cancelled for servicer method [...]"), and that line
# is the call's. grpc.aio runs each call in a task of its own, so it names no other call.
_serving: ContextVar[RequestContext | None] = ContextVar("ridtrace_serving", default=None)


def current_context() -> RequestContext | None:
    """The context of the request being handled, or ``None`` outside a request."""
    return _current.get()


def current_request_id() -> str | None:
    """The server-minted ``request_id`` of the request being handled."""
    ctx = _current.get()
    return None if ctx is None else ctx.request_id


def current_x_request_id() -> str | None:
    """The client's validated correlation id (``x_request_id``), if it sent one."""
    ctx = _current.get()
    return None if ctx is None else ctx.x_request_id


def annotate_request(**fields: Any) -> None:
    """Attach fields to the current request's ``request.end`` event (no-op outside one)."""
    ctx = _current.get()
    if ctx is not None:
        ctx.annotations.update(fields)


# The span attributes ridtrace sets from the request itself (`exchange.start_attributes`):
# an app's of one of these names is set with a leading `_`, as `annotate_request` does
# on the lines, never in place of the server's own.
_SPAN_OWN = frozenset({"request_id", "x_request_id", "deprecated_headers"})


def annotate_span(**attributes: str | bool | int | float) -> None:
    """Set attributes on the current request's server span (no-op when not recording).

    One named like ridtrace's own (``request_id``, ``x_request_id``,
    ``deprecated_headers``) is set as ``_request_id`` and so on: in their place, the
    span a client's quoted id is searched by carried the app's value and was not found.
    """
    ctx = _current.get()
    if ctx is not None and ctx.server_span is not None and ctx.server_span.is_recording():
        if not _SPAN_OWN.isdisjoint(attributes):
            attributes = {f"_{k}" if k in _SPAN_OWN else k: v for k, v in attributes.items()}
        ctx.server_span.set_attributes(attributes)


def relabel_span(ctx: RequestContext, **ids: str) -> None:
    """ridtrace's own change of the ids on ``ctx``'s server span, in place (a body id
    that fills in the missing client id; the legacy policy's client key as the
    request's id): :func:`annotate_span` keeps an app's such names apart, and the span
    a client's body id is searched by carried it as ``_x_request_id``."""
    span = ctx.server_span
    if span is not None and span.is_recording():
        span.set_attributes(ids)


# enter(ctx) makes ``ctx`` current and returns a token; leave(token) restores what was
# current before, in ``finally``. The ContextVar's own methods, not wrappers: they run
# twice on every request.
enter = _current.set
leave = _current.reset
# current() is current_context() without the call around it, for the middleware's check
# of a context inherited from another request, on every request too.
current = _current.get


def serve_in_this_task(ctx: RequestContext) -> None:
    """Name ``ctx`` as the request this task serves, for the lines written in the task
    after the request's context was reset (:func:`line_context`). Only for a task that
    serves one request and ends with it, as grpc.aio's call tasks do: a thread of a
    synchronous server's pool, or a connection's task, would name it on later lines."""
    _serving.set(ctx)


def line_context() -> RequestContext | None:
    """The request whose ids a log line written now carries: the current one, else the
    one this task served (see :func:`serve_in_this_task`)."""
    ctx = _current.get()
    return ctx if ctx is not None else _serving.get()


# Where an exception escaped a request, and from which: {place key: (the task, weakly,
# or the thread; the request; the request it escaped into)}.
_ESCAPES_ATTRIBUTE = "__ridtrace_escapes__"
# The places are one dict per exception object, which threads change at once.
_ESCAPES_LOCK = threading.Lock()
# Places one exception object keeps, the latest last. One object may escape many
# requests (a circuit breaker's stored error, raised by every call): the server logs it
# right after, in the place it escaped in, so only the places of the calls failing at
# once matter (64 lost the ids of 35 crash lines of 100 such calls), and an object that
# lives long must not grow with every request it failed (~200 bytes a place).
_ESCAPES_KEPT = 4096


def _running_task() -> Any:
    # asyncio unloaded: nothing runs in an event loop, and the CLI need not import it.
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    try:
        return asyncio.current_task()
    except RuntimeError:  # no loop running in this thread: a synchronous server's pool
        return None


def _here() -> tuple[str, int]:
    """The task, else the thread, a line is written in, as a key (its identity checked
    through the weak reference kept beside it, `_place`)."""
    task = _running_task()
    return ("task", id(task)) if task is not None else ("thread", threading.get_ident())


def _place() -> weakref.ref[Any]:
    """The task, else the thread, a line is written in, weakly: an exception kept for
    long must not keep it alive. A thread by its object, not its id: a thread started
    after a request's thread ended may get its id, and a health check's timer logging a
    stored error named the request that had raised it."""
    task = _running_task()
    return weakref.ref(task if task is not None else threading.current_thread())


def _is_here(where: object) -> bool:
    task = _running_task()
    here = task if task is not None else threading.current_thread()
    return isinstance(where, weakref.ref) and where() is here


def remember_on_exception(exc: BaseException, ctx: RequestContext, outer: object = None) -> None:
    """Attach ``ctx`` to an exception that escapes the request.

    A server (grpc.aio, uvicorn) logs such an exception after the request's context is
    gone; the log handler then takes the ids from the exception
    (:func:`context_for_exception_line`). ``outer`` is what was current around the
    request (its token's ``old_value``): another request's context when the request ran
    in a task that inherited it, as a pipelined request does under uvicorn.
    """
    where = _place()
    into = outer if isinstance(outer, RequestContext) else None
    with contextlib.suppress(AttributeError, TypeError), _ESCAPES_LOCK:
        # Per place: one object raised by calls on several threads at once (a synchronous
        # gRPC server's pool) kept the last thread's only, and gRPC's line for the others,
        # written in their own threads, carried no ids.
        escapes = getattr(exc, _ESCAPES_ATTRIBUTE, None)
        if not isinstance(escapes, dict):
            escapes = {}
            setattr(exc, _ESCAPES_ATTRIBUTE, escapes)
        key = _here()
        escapes.pop(key, None)  # the latest last
        escapes[key] = (where, ctx, into)
        while len(escapes) > _ESCAPES_KEPT:
            del escapes[next(iter(escapes))]


def forget_escape(exc: BaseException, ctx: RequestContext) -> None:
    """Forget where ``exc`` escaped ``ctx``'s request, once the server has logged it:
    a synchronous gRPC server's pool thread outlives the call, and a job it ran later,
    handling the same stored error (a circuit breaker raising its last failure again),
    was in the place the call's escape was remembered in."""
    escapes = getattr(exc, _ESCAPES_ATTRIBUTE, None)
    if not isinstance(escapes, dict):
        return
    with _ESCAPES_LOCK:
        for key in [key for key, (_, escaped, _) in escapes.items() if escaped is ctx]:
            del escapes[key]


def context_of_exception(exc: BaseException | None) -> RequestContext | None:
    """The context :func:`remember_on_exception` last attached to ``exc``, if any."""
    escapes = getattr(exc, _ESCAPES_ATTRIBUTE, None)
    if not isinstance(escapes, dict):
        return None
    with _ESCAPES_LOCK:
        ctx = next(reversed(escapes.values()), (None, None, None))[1]
    return ctx if isinstance(ctx, RequestContext) else None


def context_for_exception_line(exc: BaseException | None) -> RequestContext | None:
    """The context a line logging ``exc`` names instead of the current one, if any.

    The request ``exc`` escaped from, when no request is current or the current one is
    the request it escaped into. uvicorn starts a pipelined request's task inside the
    previous request's last ``send``: its "Exception in ASGI application" line, written
    after the middleware restored that inherited context, named the previous request.

    Only in the task (or thread) the exception escaped in, where the server reports it:
    the same exception object logged later by a background task (a failed start-up
    task's error that requests awaited, a circuit breaker's last error) is not that
    request's, and its lines were stamped with the request's ids for as long as the
    object lived.

    And only while it is being handled: a server logs the escape inside its ``except``
    (uvicorn, gRPC's sync and aio servers). A job later run by the same pooled thread of
    a synchronous gRPC server, logging the stored error with ``exc_info=``, is in the
    place the request's escape was, but handles no exception.
    """
    if exc is None:
        return None
    escapes = getattr(exc, _ESCAPES_ATTRIBUTE, None)
    if not isinstance(escapes, dict):
        return None
    if sys.exc_info()[1] is not exc:
        return _reported_by_a_loop_callback(escapes)
    escaped = escapes.get(_here())
    if escaped is None or not _is_here(escaped[0]):
        return None
    _, ctx, into = escaped
    now = _current.get()
    if isinstance(ctx, RequestContext) and (now is None or now is into):
        return ctx
    return None


def _reported_by_a_loop_callback(escapes: dict[Any, Any]) -> RequestContext | None:
    """The request whose finished task an event-loop callback reports the escape of.

    daphne reports a request's crash from a timer callback of its own (its application
    checker), outside the request's task and outside any ``except``, and the callback runs
    in the context of whichever request last armed the loop's timer: its line named that
    other request, in flight or long over. A line written by a callback (a running loop,
    no task) about an exception that last escaped a request whose task has finished
    names that request. A request's own task, or a thread, is never such a callback.
    """
    if not _in_a_loop_callback():
        return None
    with _ESCAPES_LOCK:
        latest = next(reversed(escapes.values()), None)
    if latest is None:
        return None
    where, ctx, _ = latest
    task = where() if isinstance(where, weakref.ref) else None
    done = getattr(task, "done", None)
    if not isinstance(ctx, RequestContext) or done is None or not done():
        return None
    return ctx


def _in_a_loop_callback() -> bool:
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # a thread with no loop: a pool's, a synchronous server's
        return False
    return asyncio.current_task() is None


def outside_requests(call: Callable[..., T], *args: Any) -> T:
    """``call(*args)`` with no request current, for work that runs in a request's thread
    but is the process's, not the request's: what it logs names no request."""
    current_token, serving_token = _current.set(None), _serving.set(None)
    try:
        return call(*args)
    finally:
        _serving.reset(serving_token)
        _current.reset(current_token)


def _no_request_in_a_forked_child() -> None:
    # A process forked inside a request is no part of it: a ProcessPoolExecutor's
    # workers start at its first submit() and serve every later request's tasks, whose
    # lines all named the request that happened to fork them. No ids beats wrong ones.
    _current.set(None)
    _serving.set(None)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_no_request_in_a_forked_child)
