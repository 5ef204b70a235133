"""One gRPC call's identity, span and lifecycle lines, from ``begin`` to ``finish``.

The same rules as the ASGI middleware, from the same code (``ridtrace.tracing.inbound``:
the metadata walk, the outcome rule, the deprecation WARN and the metrics): a fresh
server ``request_id``, the client's validated ``x-request-id`` as ``x_request_id``,
deprecated id keys ignored with one WARN per name per process, one server span (or the
one opentelemetry-instrumentation-grpc opened, enriched), ``request.start`` /
``request.end`` lines. The interceptor decides *when*; this module decides *what*.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from contextvars import Token
from typing import Any
from urllib.parse import unquote

import grpc
import grpc.aio
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind

from ridtrace.contract import REQUEST_END, REQUEST_START
from ridtrace.tracing import context as request_context
from ridtrace.tracing import metrics
from ridtrace.tracing.context import RequestContext, remember_on_exception
from ridtrace.tracing.eventlog import EventLog
from ridtrace.tracing.grpc.call_config import CallConfig
from ridtrace.tracing.grpc.context import Metadata, TracedServicerContext
from ridtrace.tracing.grpc.excluded import quiet_span
from ridtrace.tracing.grpc.method import MethodInfo
from ridtrace.tracing.grpc.status import (
    CANCELLED,
    NeverHandled,
    RequestUndecodable,
    mark_error,
    outcome_of,
    server_cut_off,
    span_is_error,
    status_code_of,
)
from ridtrace.tracing.grpc.stream import StreamItem
from ridtrace.tracing.identity import validate_client_id
from ridtrace.tracing.inbound import note_inbound, read_inbound
from ridtrace.tracing.jsonline import add_annotations
from ridtrace.tracing.lifecycle import running as running_calls
from ridtrace.tracing.lifecycle import running_in_threads
from ridtrace.tracing.propagation import HeldWarnings, extract, holding
from ridtrace.tracing.serverspan import (
    active_server_span,
    records_nothing,
    request_context_for,
    span_of_lines,
)

__all__ = ["GrpcCall"]

# Where grpcio logs a metadata value it cannot decode as UTF-8.
_GRPC_LOGGERS = ("grpc._cython.cygrpc",)

events = EventLog(__name__)


class GrpcCall:
    """State of one call; per-call, so nothing about a call ever lives on the interceptor."""

    __slots__ = (
        "_otel_token",
        "_token",
        "config",
        "context",
        "ctx",
        "deprecated_text",
        "id_rejected",
        "info",
        "item",
        "items",
        "owns_span",
        "span",
        "started",
    )

    def __init__(
        self,
        config: CallConfig,
        info: MethodInfo,
        context: grpc.aio.ServicerContext,
        *,
        context_type: Callable[..., Any] = TracedServicerContext,
        arrived: tuple[float, int] | None = None,
    ) -> None:
        """Read the call's metadata, mint its id, open or enrich its span, log the start.

        The request context becomes current here; :meth:`finish` must follow in
        ``finally`` in the same task (thread, on a synchronous server).
        ``context_type`` wraps gRPC's servicer context for the handler (the
        synchronous server's needs its own). ``arrived``: when the call came, as
        ``(time.perf_counter(), time.time_ns())``, for one recorded later (`unstarted`).
        """
        self.started = time.perf_counter() if arrived is None else arrived[0]
        self.info = info
        self.config = config
        self.item: StreamItem | None = None
        self.items = 0
        # grpc.aio decodes the metadata anew here, logging an ERROR per value that is not
        # UTF-8: held back, so the line carries the call's ids.
        with holding(HeldWarnings("this call's metadata"), _GRPC_LOGGERS) as undecodable:
            metadata = context.invocation_metadata() or ()
        x_request_id, rejected, deprecated_sent, carrier, user_agent = read_inbound(
            config.rules, metadata
        )
        # The call's metadata id was refused: so was that of each stream message that
        # has no body id of its own (it inherits the call's ids).
        self.id_rejected = rejected is not None
        request_id = config.mint()
        span = active_server_span()
        self.owns_span = span is None
        held = None  # the propagators' warnings, written once our context is current
        parent = None
        started = False
        if span is None:
            if carrier:
                parent, held = extract(carrier)
            if info.service in config.excluded_services:
                # No span wanted (a health check): one of ours was opened for each
                # call the instrumentation, told the same, had left out.
                span = quiet_span(parent)
            else:
                span = config.tracer.start_span(
                    info.span_name, context=parent, kind=SpanKind.SERVER,
                    attributes=info.span_attributes(),
                    start_time=None if arrived is None else arrived[1],
                )
                started = True
        self.span = span
        self.ctx = ctx = request_context_for(span, carrier, request_id, x_request_id, parent,
                                             started=started)
        if self.owns_span and records_nothing(config.tracer):
            # What a call onward names as its parent: the ids the lines carry.
            self.span = span = span_of_lines(ctx, span)
        ctx.server_span = span
        self.deprecated_text = ",".join(deprecated_sent) if deprecated_sent else None
        # Shutdown waits for the call's end (lifecycle.running), span recording or not:
        # its count and request.end come then too (only recording spans were waited for).
        running_calls.add(self)
        if span.is_recording():
            span.set_attribute("request_id", request_id)
            if x_request_id is not None:
                span.set_attribute("x_request_id", x_request_id)
            if self.deprecated_text:
                span.set_attribute("deprecated_headers", self.deprecated_text)
            if rejected is not None:  # as a refused body id is: Jaeger finds hostile ids
                span.set_attribute("x_request_id_rejected", True)

        ours: Metadata = ((config.response_key, request_id),)
        if x_request_id is not None:
            ours += ((config.client_key, x_request_id),)
        if deprecated_sent:
            ours += config.notices
        # Set now so an abort() without metadata, or a crash, still carries the id.
        context.set_trailing_metadata(ours)
        # The handler's own x-request-id stays when the client sent none, as over HTTP
        # (one the client sent is echoed instead; after a refused one, none is sent).
        sent_one = x_request_id is not None or rejected is not None
        owned = config.owned_keys if sent_one else config.server_key_only
        # Typed as the grpc.aio proxy; the synchronous one has the same attributes.
        self.context: TracedServicerContext = context_type(context, ours, owned)
        self.context.follow(ctx, config.client_key)  # a body id learnt later is echoed

        self._token: Token[RequestContext | None] = request_context.enter(ctx)
        # On the context the propagators extracted: the caller's baggage stays current
        # for the handler and every hop it makes onward, as over HTTP.
        self._otel_token: object | None = (
            otel_context.attach(trace.set_span_in_context(span, parent))
            if self.owns_span else None
        )
        undecodable.write()
        if held is not None:
            held.write()
        note_inbound(deprecated_sent, rejected)  # in the context: the WARN has the ids
        if config.log_lifecycle:
            agent = validate_client_id(user_agent[:256], 256) if user_agent else None
            events.info(
                REQUEST_START,
                event=REQUEST_START,
                rpc_method=info.full,
                path=info.full,
                route=info.span_name,
                client=_peer_text(context),
                user_agent=agent,
                deprecated_headers=self.deprecated_text,
                x_request_id_rejected=(rejected is not None) or None,
            )

    def next_item(self, message: Any) -> None:
        """A request message of a bidirectional stream arrived: it becomes the request
        in scope until the next one (or the end of the stream)."""
        if self.item is not None:
            self.item.finish(None)
        self.item = StreamItem(self, message, self.items)
        self.items += 1

    def end_item(self) -> None:
        """The handler asks for the next request message: the one in scope was answered
        (before, it ended only when the next one arrived, so its span lasted as long as
        the client's pause, and a stream cancelled meanwhile made it ``CANCELLED``)."""
        if self.item is not None:
            self.item.finish(None)
            self.item = None

    def finish(self, failure: BaseException | None) -> None:
        """End the span, write ``request.end`` and restore the contexts (in ``finally``)."""
        # What a call that never reached its handler ended with is not known here.
        status_known = not isinstance(failure, NeverHandled)
        failure = server_cut_off(failure) if status_known else failure
        if self.context.aborted and isinstance(failure, CANCELLED):
            # gRPC dropped a stream its handler yielded on after catching its own abort:
            # the client got the abort's status, no cancel (it was recorded CANCELLED).
            failure = None
        try:
            with contextlib.suppress(Exception):  # telemetry never fails a call
                self.context.echo_learnt_client_id()
            if self.item is not None:
                self.item.finish(failure, call_ended=True)
                self.item = None
            code = status_code_of(failure, self.context)
            outcome = outcome_of(code, failure, self.ctx)
            metrics.request_finished(self.info.route, outcome)
            if failure is not None and not isinstance(failure, CANCELLED):
                # gRPC logs an escaped exception after the call's context is gone; the
                # log handler finds the ids on the exception instead.
                remember_on_exception(failure, self.ctx)
            span = self.span
            if span.is_recording() and status_known:
                span.set_attribute("rpc.grpc.status_code", code.value[0])
                if self.owns_span and span_is_error(code, outcome):
                    mark_error(span, code, failure, self.context)
            if self.config.log_lifecycle:
                fields: dict[str, Any] = {
                    "event": REQUEST_END,
                    "rpc_method": self.info.full,
                    "path": self.info.full,
                    "route": self.info.span_name,
                }
                if status_known:
                    # Integer like HTTP's (the schema's type); the name for humans.
                    fields["status"], fields["grpc_status"] = code.value[0], code.name
                fields |= {
                    "outcome": outcome,
                    "duration_ms": round((time.perf_counter() - self.started) * 1000, 3),
                    "messages_in": self.context.messages_in,
                    "messages_out": self.context.messages_out,
                    "deprecated_headers": self.deprecated_text,
                }
                if self.items:
                    fields["stream_requests"] = self.items
                add_annotations(fields, self.ctx.annotations)
                if isinstance(failure, RequestUndecodable | NeverHandled):
                    fields["error"] = str(failure)  # the handler never saw why
                log = events.warning if outcome == "error" else events.info
                log(REQUEST_END, **fields)
        finally:
            if self.owns_span:
                self.span.end()
            running_calls.discard(self)
            running_in_threads.discard(self)
            self._restore()

    def _restore(self) -> None:
        # A streaming call gRPC abandoned mid-write (client cancel, message refused)
        # is finished by asyncio's finaliser in another task, whose context never had
        # ours or is a copy of the call's, where our tokens cannot be reset (a
        # ValueError, and OpenTelemetry's "Failed to detach context" traceback). It
        # dies with that task: reset only where ours is current and the token is ours.
        if request_context.current_context() is not self.ctx:
            return
        try:
            request_context.leave(self._token)
        except ValueError:
            return  # a copy of the call's context: the otel token is foreign here too
        if self._otel_token is not None and trace.get_current_span() is self.span:
            otel_context.detach(self._otel_token)  # type: ignore[arg-type]


def _peer_text(context: grpc.aio.ServicerContext) -> str | None:
    """``host:port`` like the HTTP ``client`` field (gRPC says ``ipv4:1.2.3.4:5``)."""
    peer = context.peer()
    if not isinstance(peer, str) or not peer:
        return None
    scheme, _, address = peer.partition(":")
    if scheme == "ipv6":
        # ipv6:%5B::1%5D:port: gRPC percent-encodes the brackets; HTTP lines say ::1:port.
        host, _, port = unquote(address).rpartition(":")
        return f"{host.removeprefix('[').removesuffix(']')}:{port}"
    return address if scheme == "ipv4" else peer
