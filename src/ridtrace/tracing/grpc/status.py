"""A gRPC call's status code and outcome, from how its handler ended."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

import grpc
import grpc.aio
from opentelemetry.trace import Span, Status, StatusCode

from ridtrace.contract import GRPC_SERVER_FAULT_CODES
from ridtrace.tracing.context import RequestContext, remember_on_exception
from ridtrace.tracing.grpc.context import TracedServicerContext
from ridtrace.tracing.inbound import decide_outcome

__all__ = [
    "CANCELLED",
    "NEVER_HANDLED_ERROR",
    "SERVER_FAULTS",
    "UNDECODABLE_ERROR",
    "CallEnded",
    "NeverHandled",
    "RequestUndecodable",
    "ServerStopped",
    "cut_off_after",
    "deadline_passed",
    "ended_under_handler",
    "escaped",
    "mark_error",
    "outcome_of",
    "server_cut_off",
    "span_is_error",
    "status_code_of",
]

# Codes that mean the server failed, as 5xx do over HTTP (OpenTelemetry's rpc semantic
# conventions mark the same set as span errors); the others are the caller's problem.
SERVER_FAULTS = frozenset(code for code in grpc.StatusCode
                          if code.value[0] in GRPC_SERVER_FAULT_CODES)
CANCELLED = (asyncio.CancelledError, GeneratorExit)


class CallEnded(GeneratorExit):
    """Not raised: what a call is finished with when its handler ended (returned, or
    let an exception escape) after the call itself had ended — the client cancelled or
    its deadline passed — so the client got CANCELLED / DEADLINE_EXCEEDED, not what the
    handler made. Neither server interrupts every handler then: a synchronous server
    never does, and grpc.aio ends a request iterator at the deadline as if the client
    had closed its stream, and cannot cancel a handler that blocks."""


class HandlerCancelled(Exception):
    """Not raised: what a grpc.aio call is finished with when a ``CancelledError``
    escaped its handler while nobody cancelled the call (an awaited task that something
    else cancelled, a pool shutting its worker down). grpc.aio answers such a call
    nothing: its client waits until its deadline, or for ever. A server fault, recorded
    ``UNKNOWN`` / ``error``, where it was the client's cancel."""


UNDECODABLE_ERROR = "gRPC could not deserialize a request message"
"""The ``error`` of the ``request.end`` of a call gRPC ended over such a message (the
handler never saw why)."""


class RequestUndecodable(BaseException):
    """Not raised: what a call on a synchronous server is finished with when gRPC itself
    ended it because a message of its request stream could not be deserialized. The
    client got ``INTERNAL`` ("Exception deserializing request!"); the handler only saw
    its request iterator end. (A ``BaseException``: it is no crash of the handler's.)"""

    def __init__(self) -> None:
        super().__init__(UNDECODABLE_ERROR)


NEVER_HANDLED_ERROR = (
    "the call ended before its handler ran, with a status ridtrace did not see: its "
    "deadline passed or its client cancelled while it waited, gRPC refused it "
    "(maximum_concurrent_rpcs, a request message or metadata over gRPC's limits), or an "
    "interceptor listed before ridtrace's answered it"
)
"""The ``error`` of the ``request.end`` of a grpc.aio call that never reached its handler
(`ridtrace.tracing.grpc.unstarted`)."""


class NeverHandled(GeneratorExit):
    """Not raised: what a call is finished with when it ended before its handler ran.
    What the client got is not known here (``DEADLINE_EXCEEDED``, ``CANCELLED`` or
    ``RESOURCE_EXHAUSTED``), so the call's end names no status."""

    def __init__(self) -> None:
        super().__init__(NEVER_HANDLED_ERROR)


class ServerStopped(BaseException):
    """Not raised: what a call is finished with when the server's stop cut it off once
    the grace period of :func:`~ridtrace.tracing.grpc.serve_until_signalled` was over.
    gRPC cancels it (the handler sees what a client's cancel looks like), but the client
    got ``UNAVAILABLE``: the server ended the call, as HTTP requests ended at shutdown
    are outcome ``error``."""


# When the stopping server's grace period ends (time.monotonic()); None while serving.
_cut_off_at: float | None = None


def cut_off_after(grace: float | None) -> None:
    """A server is stopping: a call cancelled ``grace`` seconds from now or later was
    cut off by the stop (:func:`server_cut_off`). ``None``: no server is stopping."""
    global _cut_off_at
    _cut_off_at = None if grace is None else time.monotonic() + grace


def server_cut_off(failure: BaseException | None) -> BaseException | None:
    """``failure``, or :class:`ServerStopped` for a cancel once the stop's grace is over."""
    if isinstance(failure, CANCELLED) and _past_cut_off():
        return ServerStopped()
    return failure


def deadline_passed(context: Any) -> bool:
    """The call's deadline has passed: its client got DEADLINE_EXCEEDED, whatever the
    handler does now."""
    remaining = context.time_remaining()
    return remaining is not None and remaining <= 0


def ended_under_handler(context: Any) -> bool:
    """A grpc.aio call ended while its handler ran on to a normal end: its deadline
    passed, or its task was cancelled (the client cancelled, the server stopped) and
    the handler caught the ``CancelledError`` and returned (a cleanup ending in
    ``return``). Its client got the call's end, not the handler's result.

    A client's deadline also ends a streamed request as its half-close would: the
    handler reads the stream's end and returns, still a little before the server's
    copy of the deadline passes (see `_deadline_reached`), and before the cancel
    reaches its task. A stream that ended that close to the deadline is taken for it.
    """
    if deadline_passed(context) or _task_cancelled():
        return True
    # The stop's cancel, once its grace is over, ends a request stream the same way,
    # before the cancel reaches the handler's task: its client got UNAVAILABLE, and the
    # call was recorded OK (`server_cut_off` names it once it is a CallEnded).
    return bool(getattr(context, "requests_ended", False)) and (
        _deadline_reached(context) or _past_cut_off())


def _past_cut_off() -> bool:
    cut_off_at = _cut_off_at
    return cut_off_at is not None and time.monotonic() >= cut_off_at


def escaped(exc: BaseException, ctx: RequestContext) -> BaseException:
    """What a grpc.aio call is finished with when ``exc`` escaped its handler.

    A handler whose task was cancelled (the client cancelled, the deadline passed, the
    server's stop) may raise another exception as it unwinds: a cleanup that fails, a
    library that turns the cancel into an error of its own. Its client got the call's
    end all the same, not ``UNKNOWN``. gRPC still logs the exception: the ids travel on
    it, as on any crash. A ``CancelledError`` of the handler's own, with the call not
    cancelled, is no client's cancel (`HandlerCancelled`).
    """
    if isinstance(exc, asyncio.CancelledError) and not _task_cancelled():
        cancelled = HandlerCancelled("a CancelledError escaped the handler of a call "
                                     "nobody cancelled: grpc.aio answers it nothing")
        cancelled.__cause__ = exc
        remember_on_exception(exc, ctx)  # grpc.aio's own line about it names the call
        return cancelled
    if (
        isinstance(exc, (CANCELLED, grpc.aio.AbortError))
        or not isinstance(exc, Exception)
        or not _task_cancelled()
        or (_TASK_GROUP_KEEPS_ITS_CANCEL and _out_of_exception_group(exc))
    ):
        return exc
    remember_on_exception(exc, ctx)
    return CallEnded()


# Python 3.11 and 3.12's TaskGroup wakes its task with a cancel when a child fails and
# leaves that request counted (CPython gh-116720, fixed in 3.13): the exception group
# out of it says nothing of the call being cancelled (each call whose fan-out failed, or
# aborted in a child, was recorded CANCELLED while its client got UNKNOWN / the code).
_TASK_GROUP_KEEPS_ITS_CANCEL = sys.version_info < (3, 13)


def _out_of_exception_group(exc: BaseException) -> bool:
    """``exc`` is a TaskGroup's exception group, or was raised while one was handled
    (``except* ValueError: raise ApiError(...)``, ``raise group.exceptions[0]``): such a
    handler unwrapped the group, and its leftover cancel is no client's."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, BaseExceptionGroup):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _task_cancelled() -> bool:
    task = asyncio.current_task()
    # A cancel nobody took back (asyncio.timeout and TaskGroup uncancel theirs).
    return task is not None and task.cancelling() > 0


# A client's deadline ends the call a little before the server's copy of it passes: the
# server counts from when the headers arrived, and grpc rounds the grpc-timeout it sends
# up (to 10 ms units from 1 s, 100 ms from 10 s: within 1%), so the client's cancel
# arrives with up to that much left. On the wire it is a cancel like any other; one this
# close to the deadline is taken for the deadline the client saw: within 1% of the
# timeout, plus 100 ms for the headers' way (a tenth of a shorter timeout, so a short
# call's own cancel stays a cancel).
_DEADLINE_SLACK_S = 0.1
_DEADLINE_SLACK_SHARE = 0.01


def _deadline_reached(context: Any) -> bool:
    # A synchronous server notes the time left when the call ended (`sync_context`); the
    # handler may return long after (the client cancelled, the deadline passes later).
    remaining: float | None = getattr(context, "remaining_at_end", None)
    if remaining is None:
        remaining = context.time_remaining()
    if remaining is None:
        return False
    if remaining <= 0:
        return True
    timeout: float | None = context.timeout
    if timeout is None:
        return False
    return remaining <= min(_DEADLINE_SLACK_S, timeout / 10) + timeout * _DEADLINE_SLACK_SHARE


def status_code_of(
    failure: BaseException | None, context: TracedServicerContext
) -> grpc.StatusCode:
    """The code the call ended with (what grpc.aio answers for an escaped exception)."""
    # A synchronous server's abort() raises a bare Exception; its context says so.
    aborted = getattr(context, "aborted", False)
    if failure is None or aborted or isinstance(failure, grpc.aio.AbortError):
        code = context.code()
        return code if isinstance(code, grpc.StatusCode) else grpc.StatusCode.OK
    if isinstance(failure, RequestUndecodable):
        return grpc.StatusCode.INTERNAL
    if isinstance(failure, ServerStopped):
        return grpc.StatusCode.UNAVAILABLE
    if isinstance(failure, CANCELLED):
        if _deadline_reached(context):
            return grpc.StatusCode.DEADLINE_EXCEEDED
        return grpc.StatusCode.CANCELLED
    # An exception the handler let escape: both servers answer the code the handler
    # set before it (``context.set_code(NOT_FOUND)``, then raise), UNKNOWN without one.
    code = context.code()
    if isinstance(code, grpc.StatusCode) and code is not grpc.StatusCode.OK:
        return code
    return grpc.StatusCode.UNKNOWN


def outcome_of(code: grpc.StatusCode, failure: BaseException | None, ctx: RequestContext) -> str:
    return decide_outcome(
        ctx, failure, finished=not isinstance(failure, CANCELLED),
        server_fault=code in SERVER_FAULTS,
    )


def span_is_error(code: grpc.StatusCode, outcome: str) -> bool:
    """Whether a call's server span gets the ``ERROR`` status.

    OpenTelemetry's rpc conventions make a server span an error for the server-fault
    codes, whatever ended the call: a call whose deadline passed is ``cancelled`` on
    the lines (its client gave up), but its span is a ``DEADLINE_EXCEEDED`` error,
    which it was not before (status unset, as if it had succeeded).
    """
    return outcome == "error" or code in SERVER_FAULTS


def mark_error(
    span: Span, code: grpc.StatusCode, failure: BaseException | None, context: Any
) -> None:
    """A call that ended in error on a span of ours: ``ERROR`` status and ``error.type``,
    as over HTTP (the exception's class for a crash, else the code's name, which
    error views and span metrics group failures by), and the crash as an event."""
    span.set_status(Status(StatusCode.ERROR, code.name))
    # An abort is a status the handler chose (a synchronous server's raises a bare
    # Exception), not a crash to record.
    aborted = isinstance(failure, grpc.aio.AbortError) or getattr(context, "aborted", False)
    crashed = failure if isinstance(failure, Exception) and not aborted else None
    span.set_attribute("error.type", type(crashed).__qualname__ if crashed else code.name)
    if crashed is not None:
        span.record_exception(crashed)
