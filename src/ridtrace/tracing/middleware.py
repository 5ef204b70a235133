"""Pure-ASGI middleware: server-minted request identity, one server span, lifecycle logs."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.propagators.textmap import Getter
from opentelemetry.trace import NonRecordingSpan, Span, SpanKind
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ridtrace.contract import REQUEST_END, REQUEST_START
from ridtrace.tracing import context as request_context
from ridtrace.tracing import metrics
from ridtrace.tracing.context import RequestContext, remember_on_exception
from ridtrace.tracing.crash import send_error_response
from ridtrace.tracing.deprecation import deprecation_response_headers
from ridtrace.tracing.eventlog import EventLog
from ridtrace.tracing.exchange import (
    Exchange,
    annotate_end,
    end_fields,
    end_time_ns,
    file_size,
    outcome_of,
    route_template,
    start_attributes,
    start_fields,
)
from ridtrace.tracing.excluded_urls import excluded_urls, request_url
from ridtrace.tracing.id_headers import IdHeaders
from ridtrace.tracing.inbound import TRACE_HEADERS, InboundRules, note_inbound, read_inbound
from ridtrace.tracing.lifecycle import running as running_requests
from ridtrace.tracing.placement import moved_into_fastapi
from ridtrace.tracing.propagation import HeldWarnings, extract
from ridtrace.tracing.serverspan import (
    active_server_span,
    minted_context,
    records_nothing,
    request_context_for,
)
from ridtrace.tracing.settings import TracingSettings

__all__ = ["RequestTracingMiddleware"]

events = EventLog(__name__)

UNMATCHED_ROUTE = metrics.UNMATCHED_ROUTE
# The scope key naming the RequestContext of the request a ridtrace middleware handles.
# A second one on the same request's way (a sub-app mounted with its own middleware)
# passes it on: it minted a second request_id whose log lines and span attributes
# contradicted the x-server-request-id the client got, and a second
# request.start / request.end pair under the same span id. A request made in process
# from inside a request (httpx's ASGITransport) has a scope of its own: it is a request
# of its own.
SCOPE_KEY = "ridtrace.context"


class _HeaderGetter(Getter[dict[str, str]]):
    """OpenTelemetry getter over the raw ASGI header list we collected."""

    def get(self, carrier: dict[str, str], key: str) -> list[str] | None:
        value = carrier.get(key)
        return None if value is None else [value]

    def keys(self, carrier: dict[str, str]) -> list[str]:
        return list(carrier)


_GETTER = _HeaderGetter()


class RequestTracingMiddleware:
    """Mints a ``request_id`` per HTTP request and makes it visible everywhere.

    For every HTTP request: a fresh server ``request_id`` (never the client's), the
    client's validated ``x-request-id`` kept as ``x_request_id`` for correlation and
    echoed back, deprecated id headers ignored with one WARN per name per process,
    one server span (or the attributes added to the server span another
    instrumentation already opened), both ids on every log line through the context,
    and ``request.start`` / ``request.end`` lifecycle lines. Non-HTTP scopes pass
    straight through.
    """

    def __init__(
        self, app: ASGIApp, *, settings: TracingSettings | None = None, **overrides: Any
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
            trace_headers=(*TRACE_HEADERS, *propagate.get_global_textmap().fields),
        )
        self._deprecation_headers = deprecation_response_headers(
            deprecation_at=config.deprecation_at,
            sunset_at=config.sunset_at,
            link=config.deprecation_link,
        )
        provider = config.tracer_provider or trace.get_tracer_provider()
        self._tracer = provider.get_tracer("ridtrace.tracing")
        self._mint = config.id_generator
        self._max_len = config.max_client_id_length
        self._log_lifecycle = config.log_lifecycle
        self._read_traceparent = config.read_traceparent
        self._span_name = config.span_name
        self._excluded = excluded_urls()
        metrics.adopt_global_meter_provider()
        # Around a FastAPI app, the work is done by a twin inside its middleware stack,
        # within FastAPI's own server span (see ridtrace.tracing.placement).
        self._pass_through = moved_into_fastapi(app, type(self), settings=config)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # SCOPE_KEY: a ridtrace middleware further out (the parent app's, around a
        # mounted sub-app that has its own) already handles this very request.
        if scope["type"] != "http" or self._pass_through or SCOPE_KEY in scope:
            await self.app(scope, receive, send)
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
        # SDK with no processor), or none is wanted for this URL (OTel's excluded URLs):
        # pay only for the ids the log lines carry.
        quiet = type(current) is NonRecordingSpan and (
            records_nothing(self._tracer)
            or (self._excluded is not None and self._excluded.url_disabled(request_url(scope))))
        if (
            quiet and carrier is None and not self._log_lifecycle
            and metrics._active is None
        ):
            # Nothing records, nothing is logged or counted: the id-only path.
            ctx = minted_context(request_id, x_request_id)
            await self._serve_identity_only(
                scope, receive, send, ctx, extra_headers, deprecated_sent, rejected
            )
            return

        await self._serve_observed(
            scope, receive, send, started, request_id, x_request_id, extra_headers,
            deprecated_text, rejected, carrier, user_agent, current, quiet,
        )

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
    ) -> None:
        """Serve with a span and/or lifecycle lines: bytes, disconnects, status, route
        and outcome are observed for them. A method of its own so that ``__call__``'s
        coroutine stays small enough for Python's small-object allocator."""
        span = active_server_span(current)
        owns_span = span is None
        # A Mount lengthens root_path in place: what it was tells route_template which
        # part of the path the mounts took.
        root_path = scope.get("root_path", "")
        parent: otel_context.Context | None = None
        held: HeldWarnings | None = None  # the propagators' warnings, for our context
        if span is not None:  # an instrumentation's server span, recording by construction
            recording = True
            span.set_attributes(start_attributes(request_id, x_request_id, deprecated_text))
        elif quiet:
            # What a no-op tracer's start_span would return, without the call: the
            # caller's span context, or the current (invalid) span. The caller's context
            # still becomes current below, so its baggage stays visible to the app.
            if carrier:
                parent, held = extract(carrier, _GETTER, traceparent=self._read_traceparent)
                span = trace.get_current_span(parent)
            else:
                span = current
            recording = False
        else:
            if carrier:
                parent, held = extract(carrier, _GETTER, traceparent=self._read_traceparent)
            # Attributes go in with the span: samplers see them, and the SDK cleans
            # them while it builds the span instead of in a second locked call.
            span = self._tracer.start_span(
                self._span_name,
                parent,
                SpanKind.SERVER,
                start_attributes(request_id, x_request_id, deprecated_text, scope),
            )
            recording = span.is_recording()
        ctx = request_context_for(span, carrier, request_id, x_request_id, parent)
        ctx.server_span = span
        if recording:  # shutdown waits for the span to end (lifecycle.running)
            running_requests.add(span)
        state = Exchange()

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
            if state.abandoned:
                # Nothing of it reaches the client, so nothing of it is recorded as
                # sent: the request is the schema's status 0, outcome cancelled (a
                # FastAPI route answered its cut-short body with a 400, logged 'ok').
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
                    **start_fields(
                        scope, user_agent, self._max_len * 2, deprecated_text,
                        rejected is not None,
                    ),
                )
            await self.app(scope, receive_counting, send_tagged)
        except BaseException as exc:
            failure = exc
            if isinstance(exc, Exception):
                # The server logs the escaped exception ("Exception in ASGI
                # application") after our context is reset: the ids travel with it.
                remember_on_exception(exc, ctx)
                # A client seen leaving (the app's body read got http.disconnect, and
                # Starlette raised ClientDisconnect) gets no answer: a 500 to nobody
                # made it a finished server error, where it was abandoned.
                if not state.response_started and not state.abandoned:
                    await send_error_response(scope, receive, send_tagged, exc, self)
            raise
        finally:
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
            running_requests.discard(span)
            if otel_token is not None:
                otel_context.detach(otel_token)
            request_context.leave(token)
            # A caller may hand the same scope dict in again (a harness, a retry).
            scope.pop(SCOPE_KEY, None)

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
        response_started = False

        async def send_with_ids(message: Message) -> None:
            nonlocal response_started
            if message["type"] == "http.response.start":
                message = self._id_headers.on_response_start(message, ctx, extra_headers, rejected)
                response_started = True
            await send(message)

        token = request_context.enter(ctx)
        scope[SCOPE_KEY] = ctx
        try:
            if deprecated_sent or rejected:
                note_inbound(deprecated_sent, rejected)
            await self.app(scope, receive, send_with_ids)
        except Exception as exc:
            remember_on_exception(exc, ctx)
            if not response_started:
                await send_error_response(scope, receive, send_with_ids, exc, self)
            raise
        finally:
            request_context.leave(token)
            # A caller may hand the same scope dict in again (a harness, a retry).
            scope.pop(SCOPE_KEY, None)
