"""One request of a bidirectional stream: identity, span and lines of its own."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import grpc
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import (
    INVALID_SPAN_CONTEXT,
    NonRecordingSpan,
    Span,
    SpanKind,
    Status,
    StatusCode,
)

from ridtrace.contract import REQUEST_END, REQUEST_START
from ridtrace.tracing import context as request_context
from ridtrace.tracing import metrics
from ridtrace.tracing.eventlog import EventLog
from ridtrace.tracing.grpc.status import mark_error, outcome_of, span_is_error, status_code_of
from ridtrace.tracing.identity import validate_client_id, without_blanks
from ridtrace.tracing.inbound import decide_outcome
from ridtrace.tracing.jsonline import add_annotations
from ridtrace.tracing.serverspan import request_context_for

if TYPE_CHECKING:
    from ridtrace.tracing.grpc.call import GrpcCall

__all__ = ["StreamItem"]

events = EventLog("ridtrace.tracing.grpc.call")


class StreamItem:
    """One request message of a bidirectional stream (KServe's ``ModelStreamInfer``):
    its own ``request_id``, its own ``x_request_id`` from its body id, its own span (a
    child of the stream's) and its own ``request.start`` / ``request.end`` lines.

    It is made current in the stream's context when the handler reads the message,
    and ends when the handler asks for the next: the handler's log lines, and the
    tasks it starts meanwhile, belong to that request.
    """

    __slots__ = (
        "_otel_token",
        "_token",
        "call",
        "ctx",
        "index",
        "owns_span",
        "span",
        "started",
    )

    def __init__(self, call: GrpcCall, message: Any, index: int) -> None:
        self.started = time.perf_counter()
        self.call = call
        self.index = index
        config = call.config
        stream = call.ctx
        raw = getattr(message, config.body_id_field, None) if config.body_id_field else None
        x_request_id = stream.x_request_id
        rejected: str | None = None
        # Without a body id of its own, the message is the call's: a refused metadata id
        # is flagged on its span and line too (counted once, with the call).
        flagged = call.id_rejected
        if isinstance(raw, (str, bytes)) and raw:
            # Stripped as a header's value and a unary call's body id are
            # (`identity.adopted_client_id`): "  id " is the id "id", and an id of only
            # blanks is an empty one, refused, not a correlation value of spaces.
            raw = without_blanks(raw)
            valid = validate_client_id(raw, config.max_len)
            if valid is None:
                rejected = metrics.rejection_reason(raw, config.max_len)
            else:
                x_request_id = valid
            flagged = valid is None
        request_id = config.mint()
        # No span when the call records none: a service left out of tracing
        # (OTEL_PYTHON_GRPC_EXCLUDED_SERVICES) had a root span per request message.
        span: Span = NonRecordingSpan(INVALID_SPAN_CONTEXT)
        if call.span.is_recording():
            span = config.tracer.start_span(
                call.info.span_name,
                context=trace.set_span_in_context(call.span),
                kind=SpanKind.SERVER,
                attributes={
                    **call.info.span_attributes(),
                    "request_id": request_id,
                    "stream_request_id": stream.request_id,
                    "stream_index": index,
                    **({"x_request_id": x_request_id} if x_request_id is not None else {}),
                    # As a unary call's refused body id is (echo.correlate_client_id).
                    **({"x_request_id_rejected": True} if flagged else {}),
                },
            )
        self.span = span
        self.owns_span = span.is_recording()
        if self.owns_span:
            self.ctx = request_context_for(span, None, request_id, x_request_id)
        else:  # nothing records: keep the stream's trace, mint this request's span id
            self.ctx = request_context_for(
                span, {"traceparent": f"00-{stream.trace_id}-{stream.span_id}-01"},
                request_id, x_request_id,
            )
        self.ctx.server_span = span
        # Replaces the stream's context in this task until finish(), which restores it
        # (the previous request, if any, restored it when it finished).
        self._token = request_context.enter(self.ctx)
        self._otel_token: object | None = (
            otel_context.attach(trace.set_span_in_context(span)) if self.owns_span else None
        )
        if rejected is not None:
            metrics.client_id_rejected(rejected)
        if config.log_lifecycle:
            events.info(
                REQUEST_START,
                event=REQUEST_START,
                rpc_method=call.info.full,
                path=call.info.full,
                route=call.info.span_name,
                stream_request_id=stream.request_id,
                stream_index=index,
                x_request_id_rejected=flagged or None,
            )

    def finish(self, failure: BaseException | None, *, call_ended: bool = False) -> None:
        """End this request's span and write its ``request.end``; ``call_ended``: the
        call ended with this request in scope, so it ends with the call's code."""
        code = grpc.StatusCode.OK
        if failure is not None or call_ended:
            # A handler that set a code and returned (shedding load: UNAVAILABLE) ended
            # the call on this request as surely as one that raised.
            code = status_code_of(failure, self.call.context)
        if failure is None and code is grpc.StatusCode.OK:
            # Answered: the handler read the next request, or the stream ended well.
            outcome = decide_outcome(self.ctx, None, finished=True, server_fault=False)
        else:
            outcome = outcome_of(code, failure, self.ctx)
        if self.call.config.log_lifecycle:
            fields: dict[str, Any] = {
                "event": REQUEST_END,
                "rpc_method": self.call.info.full,
                "path": self.call.info.full,
                "route": self.call.info.span_name,
                # The code its span has: without it, a search of the lines for failed
                # calls missed the request a stream failed on.
                "status": code.value[0],
                "grpc_status": code.name,
                "outcome": outcome,
                "duration_ms": round((time.perf_counter() - self.started) * 1000, 3),
                "stream_request_id": self.call.ctx.request_id,
                "stream_index": self.index,
            }
            add_annotations(fields, self.ctx.annotations)
            log = events.warning if outcome == "error" else events.info
            log(REQUEST_END, **fields)
        if self.owns_span:
            # A SERVER span of the method like the call's, so it has what the rpc
            # conventions require of one (span metrics group by the code) and the
            # call's error marks.
            self.span.set_attribute("rpc.grpc.status_code", code.value[0])
            if span_is_error(code, outcome):
                if failure is None and code is grpc.StatusCode.OK:  # outcome_override
                    self.span.set_status(Status(StatusCode.ERROR))
                else:
                    mark_error(self.span, code, failure, self.call.context)
            self.span.end()
        # Only where this request is current, and in the context that made it so: the
        # asyncio finaliser of a stream gRPC abandoned runs in a copy of it, where
        # OpenTelemetry's detach logged "Failed to detach context" with a traceback.
        if request_context.current_context() is not self.ctx:
            return
        try:
            request_context.leave(self._token)
        except ValueError:
            # A copy of the call's context, which dies with its task; the call's own
            # request.end, written next, still needs the call's ids current.
            request_context.enter(self.call.ctx)
            return
        if self._otel_token is not None and trace.get_current_span() is self.span:
            otel_context.detach(self._otel_token)  # type: ignore[arg-type]
