"""Pure-ASGI middleware: server-minted request identity, one server span, lifecycle logs."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import INVALID_SPAN, NonRecordingSpan
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ridtrace import __version__
from ridtrace.tracing import context as request_context
from ridtrace.tracing import fastapi_export, metrics
from ridtrace.tracing.context import RequestContext, remember_on_exception
from ridtrace.tracing.crash import call_handler_in_request, send_error_response
from ridtrace.tracing.deprecation import deprecation_response_headers
from ridtrace.tracing.exchange import answer_unanswered
from ridtrace.tracing.excluded_urls import excluded_urls, request_url
from ridtrace.tracing.id_headers import IdHeaders
from ridtrace.tracing.inbound import InboundRules, note_inbound, read_inbound
from ridtrace.tracing.lifespan_scope import serve_lifespan
from ridtrace.tracing.observed import SCOPE_KEY, ObservedServing
from ridtrace.tracing.placement import moved_into_fastapi
from ridtrace.tracing.propagation import extracted_header_names
from ridtrace.tracing.serverspan import minted_context, records_nothing, span_of_lines
from ridtrace.tracing.settings import TracingSettings
from ridtrace.tracing.websocket import serve_websocket

__all__ = ["RequestTracingMiddleware"]

# FastAPI's built-in telemetry keeps a request's telemetry under this scope key, and
# sets it to None for a request its ``exclude`` function left out.
_FASTAPI_TELEMETRY = "fastapi.telemetry"


class RequestTracingMiddleware(ObservedServing):
    """Mints a ``request_id`` per HTTP request and makes it visible everywhere.

    For every HTTP request: a fresh server ``request_id`` (never the client's), the
    client's validated ``x-request-id`` kept as ``x_request_id`` for correlation and
    echoed back, deprecated id headers ignored with one WARN per name per process,
    one server span (or the attributes added to the server span another
    instrumentation already opened), both ids on every log line through the context,
    and ``request.start`` / ``request.end`` lifecycle lines. A WebSocket connection
    gets the ids, their log context and the id headers on its handshake's answer
    (``ridtrace.tracing.websocket``); at the end of the lifespan scope ridtrace's
    telemetry is flushed (``ridtrace.tracing.lifespan_scope``); other scopes pass
    straight through.
    """

    # ``app`` is positional-only: with ``**overrides`` beside it, a type checker takes the
    # class for no match of Starlette's middleware factory (``app`` could come twice), so
    # ``app.add_middleware(RequestTracingMiddleware)`` failed ``mypy --strict`` in users' code.
    def __init__(
        self, app: ASGIApp, /, *, settings: TracingSettings | None = None, **overrides: Any
    ) -> None:
        self.app = app
        config = settings or TracingSettings()
        if overrides:
            config = replace(config, **overrides)
        self.settings = config
        # Everything __call__ compares is precomputed here, as bytes, once.
        self._id_headers = IdHeaders(config.client_id_header, config.response_id_header)
        # The header walk the gRPC interceptor shares, with names as bytes. The
        # configured propagators' headers too (b3 …), so that they are extracted.
        self._rules: InboundRules[bytes] = InboundRules(
            client_header=config.client_id_header,
            deprecated_headers=config.deprecated_headers,
            max_length=config.max_client_id_length,
            as_bytes=True,
            trace_headers=extracted_header_names(),
        )
        self._deprecation_headers = deprecation_response_headers(
            deprecation_at=config.deprecation_at,
            sunset_at=config.sunset_at,
            link=config.deprecation_link,
        )
        provider = config.tracer_provider or trace.get_tracer_provider()
        self._tracer = provider.get_tracer("ridtrace.tracing", __version__)
        self._mint = config.id_generator
        self._max_len = config.max_client_id_length
        self._log_lifecycle = config.log_lifecycle
        self._read_traceparent = config.read_traceparent
        self._span_name = config.span_name
        self._excluded = excluded_urls()
        metrics.adopt_global_meter_provider()
        # Built before FastAPI's lifespan startup adds its exporters: tell it which
        # providers export already (configure_tracing may have run before FastAPI
        # was imported).
        fastapi_export.claim_exports()
        # Around a FastAPI app, the work is done by a twin inside its middleware stack,
        # within FastAPI's own server span (see ridtrace.tracing.placement).
        self._pass_through = moved_into_fastapi(app, type(self), settings=config)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # SCOPE_KEY: a ridtrace middleware further out (the parent app's, around a
        # mounted sub-app that has its own) already handles this very request.
        if scope["type"] != "http" or self._pass_through or SCOPE_KEY in scope:
            # A WebSocket handshake is a request too; checked only off the HTTP path.
            if scope["type"] == "websocket" and not self._pass_through and SCOPE_KEY not in scope:
                await serve_websocket(self, scope, receive, send)
                return
            if scope["type"] == "lifespan" and not self._pass_through:
                await serve_lifespan(self.app, scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        inherited = request_context.current()
        if inherited is not None and _span_of(inherited):
            await self._serve_apart_from(scope, receive, send)
            return

        started = time.perf_counter()
        x_request_id, rejected, deprecated_sent, carrier, user_agent = read_inbound(
            self._rules, scope["headers"]
        )
        request_id = self._mint()
        extra_headers = [self._id_headers.server_id(request_id)]
        deprecated_text: str | None = None
        if deprecated_sent:
            deprecated_text = ",".join(deprecated_sent)
            extra_headers.extend(self._deprecation_headers)

        current = trace.get_current_span()
        # No instrumentation span and no span of ours would reach anyone (no SDK, or an
        # SDK with no processor), or none is wanted for this request (OTel's excluded
        # URLs; FastAPI's telemetry told to leave it out, which marks the scope with a
        # None): pay only for the ids the log lines carry.
        # Nothing this tracer starts reaches anyone: the ids the lines carry are then
        # the ones a call onward names (`span_of_lines`).
        unexported = type(current) is NonRecordingSpan and records_nothing(self._tracer)
        quiet = unexported or (type(current) is NonRecordingSpan and (
            scope.get(_FASTAPI_TELEMETRY, True) is None
            or (self._excluded is not None and self._excluded.url_disabled(request_url(scope)))))
        if (
            quiet and carrier is None and not self._log_lifecycle
            and metrics._active is None
        ):
            # Nothing records, nothing is logged or counted: the id-only path.
            ctx = minted_context(request_id, x_request_id)
            ctx.deprecated_headers = deprecated_text
            if unexported:  # not a request left out of the telemetry
                ctx.server_span = span_of_lines(ctx, current)
            await self._serve_identity_only(
                scope, receive, send, ctx, extra_headers, deprecated_sent, rejected
            )
            return

        await self._serve_observed(
            scope, receive, send, started, request_id, x_request_id, extra_headers,
            deprecated_text, rejected, carrier, user_agent, current, quiet, unexported,
        )

    async def _serve_apart_from(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve a request whose task inherited another request's span as current.

        uvicorn starts a pipelined request's task inside the previous request's last
        ``send``, so the task copies that request's context (a request made in process
        from inside a request, through httpx's ``ASGITransport``, runs in it too). Its
        span looked like an instrumentation's server span: the new request wrote its
        ids over it and opened none, or, once it had ended, became its child. Served
        under an empty OpenTelemetry context, the request is one of its own.
        """
        token = otel_context.attach(otel_context.Context())
        try:
            await self(scope, receive, send)
        finally:
            otel_context.detach(token)

    async def _serve_identity_only(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        ctx: RequestContext,
        extra_headers: list[tuple[bytes, bytes]],
        deprecated_sent: list[str] | None,
        rejected: str | None,
    ) -> None:
        """Serve with ids, headers and context only: no span records, no line is written,
        so nothing observes bytes, disconnects or the outcome."""
        response_started = disconnected = False

        async def receive_noting_disconnect() -> Message:
            nonlocal disconnected
            message = await receive()
            if message["type"] == "http.disconnect":
                disconnected = True
            return message

        async def send_with_ids(message: Message) -> None:
            nonlocal response_started
            if message["type"] == "http.response.start":
                message = self._id_headers.on_response_start(message, ctx, extra_headers, rejected)
                response_started = True
            await send(message)

        # Before a mounted app writes itself there: the stack holding ridtrace.
        app = scope.get("app")
        token = request_context.enter(ctx)
        scope[SCOPE_KEY] = ctx
        # The ids the lines carry, current for a call onward (`span_of_lines`).
        otel_token = (otel_context.attach(trace.set_span_in_context(ctx.server_span))
                      if ctx.server_span is not None else None)
        try:
            if deprecated_sent or rejected:
                note_inbound(deprecated_sent, rejected)
            await self.app(scope, receive_noting_disconnect, send_with_ids)
            if not response_started and not disconnected:
                # The server's own 500 came after the request's context was gone: no
                # id header, and its ERROR line no ids (as on the observed path). A
                # client gone before the answer is owed none.
                await answer_unanswered(send_with_ids)
        except BaseException as exc:
            try:
                if not response_started and isinstance(exc, Exception):
                    await send_error_response(scope, receive, send_with_ids, exc, self, app)
                elif isinstance(exc, Exception):
                    await call_handler_in_request(scope, exc, self, app)
            finally:
                # After the await, as on the observed path (one exception object may
                # escape several requests); a cancellation's line names the request too.
                remember_on_exception(exc, ctx, token.old_value)
            raise
        finally:
            if otel_token is not None:
                otel_context.detach(otel_token)
            request_context.leave(token)
            # A caller may hand the same scope dict in again (a harness, a retry).
            scope.pop(SCOPE_KEY, None)


def _span_of(inherited: RequestContext) -> bool:
    """Whether the current span is the server span of ``inherited``, another request's.

    Never the invalid span: a request served with no span may leave it as its own, and
    it is current in every context OpenTelemetry was never attached in.
    """
    span = inherited.server_span
    return span is not None and span is not INVALID_SPAN and span is trace.get_current_span()
