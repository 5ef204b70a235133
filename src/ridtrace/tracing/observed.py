"""How the middleware serves a request something observes: the server span (its own,
or the one an instrumentation opened), the counting ``receive``/``send`` wrappers,
metrics and the ``request.start`` / ``request.end`` lines.

`ObservedServing` is `RequestTracingMiddleware`'s base: the middleware chooses this
path or the identity-only one per request (`ridtrace.tracing.middleware`).
"""

from __future__ import annotations

import time

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import (
    INVALID_SPAN,
    INVALID_SPAN_CONTEXT,
    NonRecordingSpan,
    Span,
    SpanKind,
    Tracer,
)
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ridtrace.contract import REQUEST_END, REQUEST_START
from ridtrace.tracing import context as request_context
from ridtrace.tracing import metrics
from ridtrace.tracing.context import RequestContext, remember_on_exception
from ridtrace.tracing.crash import call_handler_in_request, send_error_response
from ridtrace.tracing.eventlog import EventLog
from ridtrace.tracing.exchange import (
    Exchange,
    annotate_end,
    answer_unanswered,
    end_fields,
    end_time_ns,
    file_size,
    outcome_of,
    shown_agent,
    start_attributes,
    start_fields,
)
from ridtrace.tracing.id_headers import IdHeaders
from ridtrace.tracing.inbound import note_inbound
from ridtrace.tracing.lifecycle import running as running_requests
from ridtrace.tracing.propagation import HeldWarnings, extract
from ridtrace.tracing.route_template import route_template
from ridtrace.tracing.serverspan import (
    active_server_span,
    request_context_for,
    span_of_lines,
)

__all__ = [
    "SCOPE_KEY",
    "UNMATCHED_ROUTE",
    "ObservedServing",
    "answered_by_server",
    "server_answered",
]

# The lifecycle lines name the middleware as their logger (docs/log-schema.md).
events = EventLog("ridtrace.tracing.middleware")

UNMATCHED_ROUTE = metrics.UNMATCHED_ROUTE
# The scope key naming the RequestContext of the request a ridtrace middleware handles.
# A second one on the same request's way (a sub-app mounted with its own middleware)
# passes it on: it minted a second request_id whose log lines and span attributes
# contradicted the x-server-request-id the client got, and a second
# request.start / request.end pair under the same span id. A request made in process
# from inside a request (httpx's ASGITransport) has a scope of its own: it is a request
# of its own.
SCOPE_KEY = "ridtrace.context"
# The scope key under which a server notes the answer it gave a request itself.
_SERVER_ANSWER_KEY = "ridtrace.server_answer"


def answered_by_server(scope: Scope, status: int, reason: str, size: int) -> None:
    """Note that the server itself answered ``scope``'s request (``status``, a body of
    ``size`` bytes saying ``reason``) while its app was reading, or about to read, its
    body.

    A server that refuses a body mid-read (bad chunk framing) writes its answer and
    closes, and the app sees only ``http.disconnect``: request.end said status 0 and
    outcome ``cancelled``, a client gone, for a client that stayed and was told why.
    The middleware takes the note when the request ends, over anything the app sent
    after it (which went to the closed connection): note only while the app has sent
    nothing.
    """
    scope[_SERVER_ANSWER_KEY] = (status, reason, size)


def server_answered(scope: Scope) -> bool:
    """Whether the server itself answered ``scope``'s request (`answered_by_server`): an
    answer the app gives after it reaches nobody."""
    return _SERVER_ANSWER_KEY in scope


def _take_server_answer(scope: Scope, state: Exchange, ctx: RequestContext) -> None:
    answer = scope.pop(_SERVER_ANSWER_KEY, None)
    if answer is None:
        return
    state.status, reason, size = answer
    state.body_done = True
    if state.response_started:
        # Noted only while the app had sent nothing: the server's answer went first and
        # closed the connection. An answer the app gave from the headers alone after it
        # (a 415, a 404; the parser refuses a bad transfer coding right after the
        # headers) reached nobody: its status, size and error are not the request's.
        state.bytes_out = size
        ctx.annotations["error"] = reason
        # Nor the outcome it decided ("unauthorized" for a refused key): the request's
        # is the server's answer's.
        ctx.annotations.pop("outcome_override", None)
    else:
        state.bytes_out += size
        ctx.annotations.setdefault("error", reason)


class ObservedServing:
    """The observed path of `RequestTracingMiddleware`, which sets these attributes."""

    app: ASGIApp
    _id_headers: IdHeaders
    _tracer: Tracer
    _max_len: int
    _log_lifecycle: bool
    _read_traceparent: bool
    _span_name: str

    async def _serve_observed(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        started: float,
        request_id: str,
        x_request_id: str | None,
        extra_headers: list[tuple[bytes, bytes]],
        deprecated_text: str | None,
        rejected: str | None,
        carrier: dict[str, str] | None,
        user_agent: str | bytes | None,
        current: Span,
        quiet: bool,
        unexported: bool,
    ) -> None:
        """Serve with a span and/or lifecycle lines: bytes, disconnects, status, route
        and outcome are observed for them. A method of its own so that ``__call__``'s
        coroutine stays small enough for Python's small-object allocator."""
        span = active_server_span(current)
        owns_span = span is None
        # Shown once, for both the span ridtrace opens and the request.start line.
        agent = (shown_agent(user_agent, self._max_len * 2)
                 if self._log_lifecycle or (owns_span and not quiet) else None)
        # A Mount lengthens root_path in place: what it was tells route_template which
        # part of the path the mounts took. In a mounted sub-app that has the middleware
        # itself, from the top: Starlette's first Mount keeps the app's own root path in
        # app_root_path, and the sub-app's routes are named with the mounts before them.
        root_path = scope.get("app_root_path", scope.get("root_path", ""))
        parent: otel_context.Context | None = None
        held: HeldWarnings | None = None  # the propagators' warnings, for our context
        if span is not None:  # an instrumentation's server span, recording by construction
            recording = True
            span.set_attributes(start_attributes(request_id, x_request_id, deprecated_text,
                                                   rejected=rejected is not None))
        elif quiet:
            # What a no-op tracer's start_span would return, without the call: the
            # caller's span context, or the current (invalid) span. The caller's context
            # still becomes current below, so its baggage stays visible to the app.
            if carrier:
                parent, held = extract(carrier, traceparent=self._read_traceparent)
                span = trace.get_current_span(parent)
                if span is INVALID_SPAN:
                    # No caller's span (baggage alone, say): a span object of this
                    # request's own, so that its context (the baggage) is attached
                    # below, and a request inheriting it knows it for another's.
                    span = NonRecordingSpan(INVALID_SPAN_CONTEXT)
            else:
                span = current
            recording = False
        else:
            if carrier:
                parent, held = extract(carrier, traceparent=self._read_traceparent)
            # Attributes go in with the span: samplers see them, and the SDK cleans
            # them while it builds the span instead of in a second locked call.
            span = self._tracer.start_span(
                self._span_name,
                parent,
                SpanKind.SERVER,
                start_attributes(request_id, x_request_id, deprecated_text, scope, agent,
                                 rejected is not None),
            )
            recording = span.is_recording()
        ctx = request_context_for(span, carrier, request_id, x_request_id, parent,
                                  started=not quiet and owns_span)
        if unexported:
            span = span_of_lines(ctx, span)  # what a call onward names as its parent
        ctx.server_span = span
        state = Exchange()
        # Shutdown waits for the request to end (lifecycle.running), recording or not:
        # its count and its request.end line come at its end too. Keyed by `state`,
        # which is this request's alone (a non-recording span may be shared).
        running_requests.add(state)

        async def receive_counting() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                state.bytes_in += len(message.get("body", b""))
            elif message["type"] == "http.disconnect":
                state.disconnected = True
                # Before any answer: whatever the app sends now, the server drops.
                state.abandoned = not state.response_started
            return message

        async def send_tagged(message: Message) -> None:
            if state.disconnected:
                # Nothing sent after the client left reaches it (uvicorn drops it), so
                # nothing of it is recorded as sent. Before any answer, the request is
                # the schema's status 0, outcome cancelled (a FastAPI route answered its
                # cut-short body with a 400, logged 'ok'); mid-body, the stream's end is
                # not the response finished (a BaseHTTPMiddleware inside still sends
                # its last empty body message: a stream cut short was logged 'ok').
                await send(message)
                return
            kind = message["type"]
            last = False
            if kind == "http.response.start":
                state.status = message["status"]
                message = self._id_headers.on_response_start(message, ctx, extra_headers, rejected)
                state.response_started = True
            elif kind == "http.response.body":
                state.bytes_out += len(message.get("body", b""))
                last = not message.get("more_body", False)
            elif kind == "http.response.pathsend":
                # A server with the pathsend extension (Starlette's FileResponse uses
                # it) sends the whole file for this one message: the body is done.
                state.bytes_out += file_size(message.get("path"))
                last = True
            try:
                await send(message)
            except OSError:
                # An ASGI 2.4 server tells the app its client left by failing send()
                # (Starlette then raises ClientDisconnect): abandoned, not failed.
                state.disconnected = True
                raise
            if last:
                state.body_done = True
                # The response ends here: background tasks run after it, inside the
                # app's call, and must not count in duration_ms or the span's length.
                state.finished_at = time.perf_counter()

        # Before a mounted app writes itself there: the stack holding ridtrace.
        app = scope.get("app")
        ctx.deprecated_headers = deprecated_text
        token = request_context.enter(ctx)
        scope[SCOPE_KEY] = ctx
        # A no-op tracer hands back the span that is already current; attaching it
        # again would change nothing but cost a context copy.
        # The extracted context as the base keeps the caller's baggage current, so a
        # hop onward (or any instrumentation) can carry it on.
        otel_token = (
            otel_context.attach(trace.set_span_in_context(span, parent))
            if owns_span and span is not current
            else None
        )
        failure: BaseException | None = None
        try:
            if held is not None:
                held.write()
            if deprecated_text or rejected:
                note_inbound(deprecated_text.split(",") if deprecated_text else None, rejected)
            if self._log_lifecycle:
                events.info(
                    REQUEST_START,
                    **start_fields(scope, agent, deprecated_text, rejected is not None),
                )
            await self.app(scope, receive_counting, send_tagged)
            if not state.response_started and not state.disconnected:
                await answer_unanswered(send_tagged)
        except BaseException as exc:
            failure = exc
            try:
                # A client seen leaving (the app's body read got http.disconnect, and
                # Starlette raised ClientDisconnect) gets no answer: a 500 to nobody
                # made it a finished server error, where it was abandoned.
                if (isinstance(exc, Exception) and not state.response_started
                        and not state.abandoned):
                    await send_error_response(scope, receive, send_tagged, exc, self, app)
                elif isinstance(exc, Exception):
                    await call_handler_in_request(scope, exc, self, app)
            finally:
                # The server logs the escaped exception ("Exception in ASGI
                # application") after our context is reset: the ids travel with it. A
                # cancellation too: uvicorn cancels what still runs when its
                # graceful-shutdown timeout ends. Set after the error response's await:
                # one exception object raised by several requests (a shared future's)
                # named, on every request's line, the last to set it.
                remember_on_exception(exc, ctx, token.old_value)
            raise
        finally:
            _take_server_answer(scope, state, ctx)
            outcome = outcome_of(state, failure, ctx)
            route = route_template(scope, root_path)
            metrics.request_finished(route or UNMATCHED_ROUTE, outcome)
            # FastAPI's telemetry ends its span as the last body byte goes out,
            # before we get here: writing to an ended span only earns a warning.
            if recording and span.is_recording():
                annotate_end(span, state.status, route, outcome, failure, owns_span=owns_span)
            if self._log_lifecycle:
                fields = end_fields(
                    scope, state, outcome, route,
                    (state.finished_at or time.perf_counter()) - started,
                    deprecated_text, ctx,
                )
                log = events.warning if outcome == "error" else events.info
                log(REQUEST_END, **fields)
            if owns_span and recording:  # a non-recording span has nothing to end
                span.end(end_time_ns(state.finished_at))
            running_requests.discard(state)
            if otel_token is not None:
                otel_context.detach(otel_token)
            request_context.leave(token)
            # A caller may hand the same scope dict in again (a harness, a retry).
            scope.pop(SCOPE_KEY, None)
