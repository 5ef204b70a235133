"""The 500 a request gets when the application raised before its response started.

Starlette and FastAPI answer an escaped exception in ``ServerErrorMiddleware``, the
outermost layer of their stack, with the application's own handler for ``500`` /
``Exception`` (or the debug traceback page). ridtrace sits inside that layer, and the
plain 500 it used to send first (so that the answer carried the id headers) replaced
the application's answer: a JSON error body became ``Internal Server Error``. Here
that layer's answer is made inside ridtrace instead, so it carries the id headers and
the handler runs with the request's ids current; the layer, seeing the response
started, sends nothing more. The layer calls its handler before it looks whether the
response started, so its handler is wrapped, once, to skip an exception ridtrace
already answered: the application's handler runs once per crash, as before.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
from typing import Any

from starlette.types import Message, Receive, Scope, Send

from ridtrace.tracing.exchange import send_internal_error

__all__ = ["call_handler_in_request", "send_error_response"]

# How far down an application's middleware stack ridtrace is looked for.
_MAX_LAYERS = 64
# The scope key holding the exception ridtrace answered with the application's handler.
_ANSWERED = "ridtrace.answered"


async def send_error_response(
    scope: Scope, receive: Receive, send: Send, exc: Exception, middleware: object,
    app: object,
) -> None:
    """Answer the crashed request as the application would have: its error handler's
    (or debug page's) response when ``middleware`` runs inside a Starlette
    ``ServerErrorMiddleware`` of ``app`` (``scope["app"]`` as ridtrace was entered),
    else a plain 500. Never raises: the caller re-raises ``exc``, which nothing here
    may mask."""
    started = False

    async def send_once(message: Message) -> None:
        nonlocal started
        started = True
        await send(message)

    layer = None
    with contextlib.suppress(Exception):
        layer = _server_error_layer(app, middleware)
    if layer is not None and (layer.debug or layer.handler is not None):
        # On the scope, not the exception: one exception object may be raised by
        # several requests, and only this one was answered. Before the call: a handler
        # that raises was called again by the layer, outside the request (its lines
        # without ids, its side effects twice).
        scope[_ANSWERED] = exc
        response = await _handler_answer(layer, scope, exc)
        if response is not None:
            with contextlib.suppress(Exception):
                await response(scope, receive, send_once)
    if not started:  # no handler, or it failed before answering
        await send_internal_error(send)


async def _handler_answer(layer: Any, scope: Scope, exc: Exception) -> Any:
    """The layer's answer to `exc`, or None when its handler raised: logged here, with
    the request's ids, where the layer's own call had the server log it without."""
    try:
        return await _answer_of(layer, scope, exc)
    except Exception:
        _log_handler_failure(exc)
        return None


def _log_handler_failure(exc: Exception) -> None:
    with contextlib.suppress(Exception):
        logging.getLogger(__name__).exception(
            "the application's exception handler raised while handling %s",
            type(exc).__name__)


async def call_handler_in_request(
    scope: Scope, exc: Exception, middleware: object, app: object
) -> None:
    """Run the application's error handler for a crash after the response started (a
    background task's, a streaming body's), with the request's ids current.

    ``ServerErrorMiddleware`` calls its handler for such a crash too, then sends nothing,
    but outside ridtrace: the lines the handler logged carried no ids. Here it runs once,
    inside; its answer is not sent (the response started), and the layer's call skips
    the exception (`_handler_once`). Never raises."""
    with contextlib.suppress(Exception):
        layer = _server_error_layer(app, middleware)
        if layer is None or layer.debug or layer.handler is None:
            return
        from starlette.requests import Request

        handler = _handler_once(layer)
        scope[_ANSWERED] = exc  # before the call: a handler that raises runs once too
        try:
            await _call(handler, Request(scope), exc)
        except Exception:
            _log_handler_failure(exc)


def _server_error_layer(app: object, middleware: object) -> Any:
    """The ``ServerErrorMiddleware`` above ``middleware`` in ``app``'s stack, if any.

    ``app`` is ``scope["app"]`` as ridtrace was entered: a mounted Starlette or FastAPI
    app writes itself there (Starlette's router updates the scope in place), and the
    outer stack, ridtrace's, was not found from it."""
    from starlette.middleware.errors import ServerErrorMiddleware

    layer = getattr(app, "middleware_stack", None)
    found = None
    for _ in range(_MAX_LAYERS):
        if layer is None:
            return None
        if layer is middleware:
            return found
        if isinstance(layer, ServerErrorMiddleware):
            found = layer
        layer = getattr(layer, "app", None)
    return None


async def _answer_of(layer: Any, scope: Scope, exc: Exception) -> Any:
    """What ``ServerErrorMiddleware`` would have sent, made the way it makes it."""
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request

    # Without receive, as the layer builds it: the endpoint may have read the body
    # already, and a handler reading it again must fail at once, not wait on a
    # client that has nothing more to send.
    request = Request(scope)
    if layer.debug:
        return await run_in_threadpool(layer.debug_response, request, exc)
    return await _call(_handler_once(layer), request, exc)


async def _call(handler: Any, request: Any, exc: Exception) -> Any:
    """Call a Starlette exception handler, async or not, as Starlette does."""
    from starlette.concurrency import run_in_threadpool

    if inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
        getattr(handler, "__call__", None)  # noqa: B004 - an instance with async __call__
    ):
        return await handler(request, exc)
    return await run_in_threadpool(handler, request, exc)


def _handler_once(layer: Any) -> Any:
    """The application's handler of ``layer``, which from now on calls it only for
    exceptions ridtrace did not answer (wrapped the first time, kept after)."""
    current = layer.handler
    original = getattr(current, "_ridtrace_original", None)
    if original is not None:
        return original

    async def unless_answered(request: Any, exc: Exception) -> Any:
        if getattr(request, "scope", {}).get(_ANSWERED) is exc:
            from starlette.responses import PlainTextResponse

            # Never sent: the layer sees that the response started.
            return PlainTextResponse("Internal Server Error", status_code=500)
        return await _call(current, request, exc)

    unless_answered._ridtrace_original = current  # type: ignore[attr-defined]
    layer.handler = unless_answered
    return current
