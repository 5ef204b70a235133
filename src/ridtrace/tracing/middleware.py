"""Pure-ASGI middleware: server-minted request identity, one server span, lifecycle logs."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from loguru import logger
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.propagators.textmap import Getter
from opentelemetry.trace import SpanKind, Status, StatusCode
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ridtrace.tracing import context as request_context
from ridtrace.tracing.context import RequestContext
from ridtrace.tracing.deprecation import deprecation_response_headers, warn_once
from ridtrace.tracing.identity import validate_client_id
from ridtrace.tracing.serverspan import active_server_span, request_context_for
from ridtrace.tracing.settings import TracingSettings

__all__ = ["RequestTracingMiddleware"]

_TRACE_HEADERS = frozenset({b"traceparent", b"tracestate", b"baggage"})
_INTERNAL_ERROR_BODY = b"Internal Server Error"


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
        self._client_header = config.client_id_header.lower().encode("latin-1")
        self._response_header = config.response_id_header.lower().encode("latin-1")
        self._deprecated = {
            name.lower().encode("latin-1"): name.lower() for name in config.deprecated_headers
        }
        self._stripped = {self._client_header, self._response_header}
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
        self._span_name = config.span_name

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        started = time.perf_counter()
        x_request_id: str | None = None
        rejected = False
        deprecated_sent: list[str] = []
        carrier: dict[str, str] = {}
        for name, value in scope["headers"]:
            if name == self._client_header:
                if x_request_id is None:
                    x_request_id = validate_client_id(value, self._max_len)
                    rejected = rejected or x_request_id is None
            elif name in self._deprecated:
                header = self._deprecated[name]
                if header not in deprecated_sent:
                    deprecated_sent.append(header)
            elif name in _TRACE_HEADERS:
                carrier.setdefault(name.decode("latin-1"), value.decode("latin-1"))
        for header in deprecated_sent:
            warn_once(header)

        request_id = self._mint()
        method: str = scope.get("method", "")
        path: str = scope.get("path", "")
        current = trace.get_current_span()
        span = active_server_span(current)
        owns_span = span is None
        if span is None:
            parent = propagate.extract(carrier, getter=_GETTER) if carrier else None
            span = self._tracer.start_span(self._span_name, parent, SpanKind.SERVER)
        recording = span.is_recording()
        ctx = request_context_for(span, carrier, request_id, x_request_id)
        ctx.server_span = span
        deprecated_text = ",".join(deprecated_sent) if deprecated_sent else None
        if recording:
            attributes: dict[str, str] = {"request_id": request_id}
            if x_request_id is not None:
                attributes["x_request_id"] = x_request_id
            if deprecated_text:
                attributes["deprecated_headers"] = deprecated_text
            if owns_span:
                attributes["http.request.method"] = method
                attributes["url.path"] = path
            span.set_attributes(attributes)  # one lock round-trip in the SDK, not five
        # Byte counts, disconnects, outcome and route only feed the span and the
        # lifecycle lines; with neither, the id-only path skips observing them.
        observe = recording or self._log_lifecycle

        extra_headers = [(self._response_header, request_id.encode("latin-1"))]
        if deprecated_sent:
            extra_headers.extend(self._deprecation_headers)
        state = _Exchange()

        async def receive_counting() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                state.bytes_in += len(message.get("body", b""))
            elif message["type"] == "http.disconnect":
                state.disconnected = True
            return message

        async def send_tagged(message: Message) -> None:
            if message["type"] == "http.response.start":
                state.status = message["status"]
                message = dict(message)
                message["headers"] = self._response_headers(
                    message.get("headers", ()), ctx, extra_headers
                )
                state.response_started = True
            elif message["type"] == "http.response.body":
                state.bytes_out += len(message.get("body", b""))
                if not message.get("more_body", False):
                    state.body_done = True
            await send(message)

        token = request_context.enter(ctx)
        # A no-op tracer hands back the span that is already current; attaching it
        # again would change nothing but cost a context copy.
        otel_token = (
            otel_context.attach(trace.set_span_in_context(span))
            if owns_span and span is not current
            else None
        )
        failure: BaseException | None = None
        try:
            if self._log_lifecycle:
                logger.info(
                    "request.start",
                    event="request.start",
                    method=method,
                    path=path,
                    client=_client_text(scope),
                    user_agent=_user_agent(scope["headers"], self._max_len),
                    deprecated_headers=deprecated_text,
                    x_request_id_rejected=rejected or None,
                )
            await self.app(scope, receive_counting if observe else receive, send_tagged)
        except BaseException as exc:
            failure = exc
            if isinstance(exc, Exception) and not state.response_started:
                # Outer error handlers (Starlette's ServerErrorMiddleware, the server)
                # would send the 500 with the raw `send`, without our id header; send
                # it here so even crashed requests can be found, then re-raise as is.
                with contextlib.suppress(Exception):  # a gone client must not mask exc
                    await _send_internal_error(send_tagged)
            raise
        finally:
            if observe:
                outcome = _outcome(state, failure, ctx)
                route = _route_template(scope)
                # FastAPI's telemetry ends its span as the last body byte goes out,
                # before we get here: writing to an ended span only earns a warning.
                if recording and span.is_recording():
                    end_attributes: dict[str, str | int] = {
                        "http.response.status_code": state.status
                    }
                    if route:
                        end_attributes["http.route"] = route
                    span.set_attributes(end_attributes)
                    if outcome == "error" and owns_span:
                        span.set_status(Status(StatusCode.ERROR))
                        if failure is not None and isinstance(failure, Exception):
                            span.record_exception(failure)
                if self._log_lifecycle:
                    fields: dict[str, Any] = {
                        "event": "request.end",
                        "method": method,
                        "path": path,
                        "route": route,
                        "status": state.status,
                        "outcome": outcome,
                        "duration_ms": round((time.perf_counter() - started) * 1000, 3),
                        "bytes_in": state.bytes_in,
                        "bytes_out": state.bytes_out,
                        "deprecated_headers": deprecated_text,
                    }
                    fields.update(ctx.annotations)
                    fields.pop("outcome_override", None)
                    log = logger.warning if outcome == "error" else logger.info
                    log("request.end", **fields)
            if owns_span:
                span.end()
            if otel_token is not None:
                otel_context.detach(otel_token)
            request_context.leave(token)

    def _response_headers(
        self,
        headers: Iterable[tuple[bytes, bytes]],
        ctx: RequestContext,
        extra: list[tuple[bytes, bytes]],
    ) -> list[tuple[bytes, bytes]]:
        # Replace, never duplicate: drop whatever the app set for the id headers.
        out = [(k, v) for k, v in headers if k.lower() not in self._stripped]
        # The echoed client id is the validated one: printable ASCII, capped, so it
        # cannot split the header block.
        if ctx.x_request_id is not None:
            out.append((self._client_header, ctx.x_request_id.encode("latin-1")))
        out.extend(extra)
        return out


class _Exchange:
    """What the middleware observed of one request/response exchange."""

    __slots__ = ("body_done", "bytes_in", "bytes_out", "disconnected", "response_started", "status")

    def __init__(self) -> None:
        self.status = 0
        self.bytes_in = 0
        self.bytes_out = 0
        self.response_started = False
        self.body_done = False
        self.disconnected = False


def _outcome(state: _Exchange, failure: BaseException | None, ctx: RequestContext) -> str:
    override = ctx.annotations.get("outcome_override")
    if isinstance(override, str):
        return override
    if state.body_done:
        return "error" if state.status >= 500 else "ok"
    if state.disconnected or isinstance(failure, (asyncio.CancelledError, OSError)):
        return "cancelled"
    return "error"


async def _send_internal_error(send: Send) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 500,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(_INTERNAL_ERROR_BODY)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": _INTERNAL_ERROR_BODY})


def _client_text(scope: Scope) -> str | None:
    client = scope.get("client")
    if not client:
        return None
    return f"{client[0]}:{client[1]}"


def _user_agent(headers: Iterable[tuple[bytes, bytes]], max_len: int) -> str | None:
    for name, value in headers:
        if name == b"user-agent":
            return validate_client_id(value[: max_len * 2], max_len * 2)
    return None


def _route_template(scope: Scope) -> str | None:
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else None
