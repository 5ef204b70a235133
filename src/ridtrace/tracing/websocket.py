"""WebSocket connections under the middleware: ids, log context and the handshake's headers.

A WebSocket handshake is an HTTP request whose handler runs for the connection's whole
life, so it gets what every request gets from ridtrace: a fresh server ``request_id``,
the client's checked ``x-request-id`` as ``x_request_id``, the deprecated-header WARN,
the ids on every line written meanwhile, and a ``request.start`` / ``request.end`` pair
(``protocol`` ``websocket``): the end's ``status`` is the handshake's answer (101
accepted, or the denial's), its ``duration_ms`` the connection's life. Without them a
connection that sent a deprecated header left no record of it after the process's one
WARN (the audit counted one connection of many), and ``ridtrace trace`` showed a clean
connection as one whose start and answer were lost. The handshake's answer
(``websocket.accept``, or the denial response of the ASGI extension) carries
``x-server-request-id`` and the echo. A server span another instrumentation opened for
the connection gets the ids; ridtrace opens no span of its own and does not count the
connection in ``ridtrace.requests``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from starlette.types import Message, Receive, Scope, Send

from ridtrace.contract import REQUEST_END, REQUEST_START
from ridtrace.tracing import context as request_context
from ridtrace.tracing.context import RequestContext, remember_on_exception
from ridtrace.tracing.exchange import (
    MAX_SHOWN_PATH,
    add_route_and_audit,
    shown_agent,
    start_attributes,
    start_fields,
)
from ridtrace.tracing.identity import shown_text
from ridtrace.tracing.inbound import note_inbound, read_inbound
from ridtrace.tracing.jsonline import add_annotations
from ridtrace.tracing.observed import SCOPE_KEY, events
from ridtrace.tracing.propagation import extract
from ridtrace.tracing.route_template import route_template
from ridtrace.tracing.serverspan import active_server_span, minted_context, request_context_for

if TYPE_CHECKING:
    from ridtrace.tracing.middleware import RequestTracingMiddleware

__all__ = ["serve_websocket"]

# The messages that answer a handshake, both with the headers an HTTP response has.
_ANSWERS = frozenset({"websocket.accept", "websocket.http.response.start"})
# What the server answers a handshake the app closed before accepting, or left
# unanswered, and one whose app raised before answering (uvicorn's and hypercorn's).
_CLOSED_UNACCEPTED = 403
_FAILED_UNANSWERED = 500
# request.start / request.end's `protocol` on a WebSocket connection's lines.
WEBSOCKET = "websocket"


async def serve_websocket(
    middleware: RequestTracingMiddleware, scope: Scope, receive: Receive, send: Send
) -> None:
    """Serve one WebSocket connection with ``middleware``'s rules (see the module)."""
    started = time.perf_counter()
    x_request_id, rejected, deprecated_sent, carrier, agent = read_inbound(
        middleware._rules, scope["headers"]
    )
    request_id = middleware._mint()
    root_path = scope.get("app_root_path", scope.get("root_path", ""))
    held = None
    instrumentation_span = active_server_span()
    if instrumentation_span is not None:
        ctx = request_context_for(instrumentation_span, carrier, request_id, x_request_id)
        ctx.server_span = instrumentation_span  # annotate_span() in the handler reaches it
        deprecated = ",".join(deprecated_sent) if deprecated_sent else None
        instrumentation_span.set_attributes(
            start_attributes(request_id, x_request_id, deprecated, rejected=bool(rejected))
        )
    elif carrier:  # the caller's trace on the lines, as for a request no span records
        parent, held = extract(carrier, traceparent=middleware._read_traceparent)
        span = trace.get_current_span(parent)
        ctx = request_context_for(span, carrier, request_id, x_request_id, parent)
    else:
        ctx = minted_context(request_id, x_request_id)
    extra_headers = [middleware._id_headers.server_id(request_id)]
    if deprecated_sent:
        extra_headers.extend(middleware._deprecation_headers)

    answered: list[int] = []  # the handshake's answer: 101, or the denial's status

    async def send_with_ids(message: Message) -> None:
        kind = message["type"]
        if kind in _ANSWERS:
            message = middleware._id_headers.on_response_start(
                message, ctx, extra_headers, rejected
            )
            answered.append(101 if kind == "websocket.accept" else int(message["status"]))
        elif kind == "websocket.close" and not answered:
            answered.append(_CLOSED_UNACCEPTED)
        await send(message)

    deprecated_text = ",".join(deprecated_sent) if deprecated_sent else None
    token = request_context.enter(ctx)
    scope[SCOPE_KEY] = ctx
    failure: BaseException | None = None
    try:
        if held is not None:
            held.write()
        if deprecated_sent or rejected:
            note_inbound(deprecated_sent, rejected)
        if middleware._log_lifecycle:
            shown = shown_agent(agent, middleware._max_len * 2)
            start = start_fields(scope, shown, deprecated_text, bool(rejected))
            events.info(REQUEST_START, **{**start, "method": "GET", "protocol": WEBSOCKET})
        await middleware.app(scope, receive, send_with_ids)
    except BaseException as exc:
        failure = exc
        remember_on_exception(exc, ctx, token.old_value)
        raise
    finally:
        if middleware._log_lifecycle:
            end = _end_fields(scope, ctx, answered, failure, route_template(scope, root_path),
                              time.perf_counter() - started, deprecated_text)
            (events.warning if end["outcome"] == "error" else events.info)(REQUEST_END, **end)
        request_context.leave(token)
        scope.pop(SCOPE_KEY, None)


def _end_fields(
    scope: Scope, ctx: RequestContext, answered: list[int], failure: BaseException | None,
    route: str | None, duration_s: float, deprecated: str | None,
) -> dict[str, Any]:
    """A WebSocket connection's ``request.end``: the handshake's answer as its status,
    ``error`` when the app raised, ``cancelled`` when it was cancelled (a server's
    shutdown), else ``ok``, however the connection closed."""
    if answered:
        status = answered[0]
    else:
        status = _FAILED_UNANSWERED if isinstance(failure, Exception) else _CLOSED_UNACCEPTED
    outcome = ("ok" if failure is None else "error" if isinstance(failure, Exception)
               else "cancelled")
    fields: dict[str, Any] = {
        "event": REQUEST_END, "method": "GET", "protocol": WEBSOCKET,
        "path": shown_text(scope.get("path", ""), MAX_SHOWN_PATH),
        "status": status, "outcome": outcome, "duration_ms": round(duration_s * 1000, 3),
    }
    add_route_and_audit(fields, scope, route, deprecated)
    if outcome == "error":  # its type only: an exception's text may hold client data
        fields["error"] = type(failure).__name__
    if ctx.annotations:
        add_annotations(fields, ctx.annotations)
    return fields
