"""The trace headers of the frontend-to-worker hop.

With an SDK span recording the request, the configured propagators
(``OTEL_PROPAGATORS``: W3C trace context and baggage by default, b3 or others when
configured) write the headers, so the caller's ``tracestate`` and ``baggage`` travel on
to the worker, as they arrived. Without one, a minimal ``traceparent`` naming the ids
the log lines carry keeps frontend and worker lines in one trace at no cost.
"""

from __future__ import annotations

from opentelemetry import propagate, trace

from ridtrace.tracing import RequestContext, format_traceparent

__all__ = ["worker_hop_headers"]


def worker_hop_headers(ctx: RequestContext | None) -> dict[str, str]:
    """The trace headers to send with the work envelope of the request ``ctx``."""
    if ctx is None:
        return {}
    span = ctx.server_span
    if span is not None and span.is_recording():
        carrier: dict[str, str] = {}
        # The server span as parent, in the current context (which holds the caller's
        # baggage): with FastAPI's telemetry the current span is an operation span.
        propagate.inject(carrier, context=trace.set_span_in_context(span))
        return carrier
    return {"traceparent": format_traceparent(ctx.trace_id, ctx.span_id)}
