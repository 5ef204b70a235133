"""WebSocket connections under the middleware: ids, log context and the handshake's headers.

A WebSocket handshake is an HTTP request whose handler runs for the connection's whole
life, so it gets what every request gets from ridtrace: a fresh server ``request_id``,
the client's checked ``x-request-id`` as ``x_request_id``, the deprecated-header WARN,
and the ids on every line written meanwhile; the handshake's answer (``websocket.accept``,
or the denial response of the ASGI extension) carries ``x-server-request-id`` and the
echo. A server span another instrumentation opened for the connection gets the ids.
ridtrace opens no span of its own and writes no ``request.start`` / ``request.end``:
their status, bytes and outcome describe an HTTP exchange, not a connection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from opentelemetry import trace
from starlette.types import Message, Receive, Scope, Send

from ridtrace.tracing import context as request_context
from ridtrace.tracing.context import remember_on_exception
from ridtrace.tracing.exchange import start_attributes
from ridtrace.tracing.inbound import note_inbound, read_inbound
from ridtrace.tracing.observed import SCOPE_KEY
from ridtrace.tracing.propagation import extract
from ridtrace.tracing.serverspan import active_server_span, minted_context, request_context_for

if TYPE_CHECKING:
    from ridtrace.tracing.middleware import RequestTracingMiddleware

__all__ = ["serve_websocket"]

# The messages that answer a handshake, both with the headers an HTTP response has.
_ANSWERS = frozenset({"websocket.accept", "websocket.http.response.start"})


async def serve_websocket(
    middleware: RequestTracingMiddleware, scope: Scope, receive: Receive, send: Send
) -> None:
    """Serve one WebSocket connection with ``middleware``'s rules (see the module)."""
    x_request_id, rejected, deprecated_sent, carrier, _agent = read_inbound(
        middleware._rules, scope["headers"]
    )
    request_id = middleware._mint()
    held = None
    instrumentation_span = active_server_span()
    if instrumentation_span is not None:
        ctx = request_context_for(instrumentation_span, carrier, request_id, x_request_id)
        ctx.server_span = instrumentation_span  # annotate_span() in the handler reaches it
        deprecated = ",".join(deprecated_sent) if deprecated_sent else None
        instrumentation_span.set_attributes(start_attributes(request_id, x_request_id, deprecated))
    elif carrier:  # the caller's trace on the lines, as for a request no span records
        parent, held = extract(carrier, traceparent=middleware._read_traceparent)
        span = trace.get_current_span(parent)
        ctx = request_context_for(span, carrier, request_id, x_request_id, parent)
    else:
        ctx = minted_context(request_id, x_request_id)
    extra_headers = [middleware._id_headers.server_id(request_id)]
    if deprecated_sent:
        extra_headers.extend(middleware._deprecation_headers)

    async def send_with_ids(message: Message) -> None:
        if message["type"] in _ANSWERS:
            message = middleware._id_headers.on_response_start(
                message, ctx, extra_headers, rejected
            )
        await send(message)

    token = request_context.enter(ctx)
    scope[SCOPE_KEY] = ctx
    try:
        if held is not None:
            held.write()
        if deprecated_sent or rejected:
            note_inbound(deprecated_sent, rejected)
        await middleware.app(scope, receive, send_with_ids)
    except BaseException as exc:
        remember_on_exception(exc, ctx, token.old_value)
        raise
    finally:
        request_context.leave(token)
        scope.pop(SCOPE_KEY, None)
