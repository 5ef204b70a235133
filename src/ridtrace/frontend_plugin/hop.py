"""The trace headers of the frontend-to-worker hop.

With an SDK span recording the request, the configured propagators
(``OTEL_PROPAGATORS``: W3C trace context and baggage by default, b3 or others when
configured) write the headers, so the caller's ``tracestate`` and ``baggage`` travel on
to the worker, as they arrived. Without one, a minimal ``traceparent`` naming the ids
the log lines carry keeps frontend and worker lines in one trace at no cost; its sampled
flag carries the frontend's decision on, so a trace sampled out stays out on the worker.
Both ways, the hop carries a ``traceparent`` and, for propagators that do not write one
(b3), the same ids in their format too.
"""

from __future__ import annotations

from opentelemetry import propagate, trace

from ridtrace.tracing import RequestContext, format_traceparent
from ridtrace.tracing.traceparent import propagator_headers

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
        if "traceparent" not in carrier:
            # ridtrace's own wire, whatever the propagators write: under
            # OTEL_PROPAGATORS=none (or b3) at the frontend only, a worker reading W3C got
            # nothing, and its span and lines named no caller (forensics links a worker
            # to its caller by that parent).
            sampled = span.get_span_context().trace_flags.sampled
            carrier["traceparent"] = format_traceparent(ctx.trace_id, ctx.span_id, sampled=sampled)
        return carrier
    sampled = _sampled(span)
    headers = {"traceparent": format_traceparent(ctx.trace_id, ctx.span_id, sampled=sampled)}
    # The same in the configured format too (b3): a worker whose span records extracts
    # with its own propagators, and under b3 it started a trace of its own (lines that
    # named no caller, a root span exported for a trace sampled out).
    headers.update(propagator_headers(ctx.trace_id, ctx.span_id, sampled=sampled))
    return headers


def _sampled(span: trace.Span | None) -> bool:
    """Whether the worker may record the hop: not when the trace was sampled out here.

    A span that does not record but has a valid context was sampled out (by the
    frontend's sampler, or by the caller's unsampled ``traceparent`` a parent-based one
    honours; with no SDK span it is the caller's own context). Sent as sampled, the
    worker's default parent-based sampler exported every such hop anyway: orphan spans
    whose parent never reached the collector, and no volume saved on the workers.
    Without any context (no caller, no SDK span) the worker decides.
    """
    if span is None:
        return True
    span_context = span.get_span_context()
    return not span_context.is_valid or span_context.trace_flags.sampled
