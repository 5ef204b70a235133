"""The one-server-span rule and the ids a request's log lines carry, shared by transports.

The ASGI middleware and the gRPC interceptor must agree on both, or a request's log
lines and its span would name different ids depending on how it arrived.
"""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags

from ridtrace.tracing.context import RequestContext
from ridtrace.tracing.identity import mint_span_id, mint_trace_span_ids
from ridtrace.tracing.traceparent import parse_traceparent

__all__ = [
    "active_server_span",
    "is_noop_tracer",
    "minted_context",
    "records_nothing",
    "request_context_for",
    "span_of_lines",
]


def active_server_span(current: trace.Span | None = None) -> trace.Span | None:
    """The recording server span another instrumentation already opened, if any.

    FastAPI's telemetry, opentelemetry-instrumentation-fastapi and
    opentelemetry-instrumentation-grpc each open one; ridtrace enriches it instead of
    adding a second server span beside it. ``current`` saves the lookup for a caller
    that already holds ``trace.get_current_span()``.
    """
    if current is None:
        current = trace.get_current_span()
    if current.is_recording() and getattr(current, "kind", None) is SpanKind.SERVER:
        return current
    return None


def is_noop_tracer(tracer: trace.Tracer) -> bool:
    """True while `tracer` cannot record: the API's no-op tracer, or the global proxy
    before any SDK provider is set.

    Asked per request, not once: `configure_tracing()` may run after the app is built,
    and the proxy then starts handing out real spans. A no-op tracer's ``start_span``
    only returns the current span, so callers skip it (a visible share of the id-only
    path). ``_tracer`` is the proxy's resolving property; if a future API drops it, the
    proxy is simply treated as live and spans are started as before.
    """
    if type(tracer) is trace.ProxyTracer:  # type(), not isinstance: these are ABCs
        tracer = getattr(tracer, "_tracer", tracer)
    return type(tracer) is trace.NoOpTracer


def records_nothing(tracer: trace.Tracer) -> bool:
    """True while no span `tracer` starts can reach anyone: a no-op tracer (see
    :func:`is_noop_tracer`), or an SDK tracer whose provider has no span processor.

    The second is what ``configure_tracing()`` builds when no OTLP endpoint is set, so
    ``ridtrace serve`` without a collector: an SDK span there was the largest single
    cost of a request's telemetry (about 40 µs to build, attribute and end, issue 15)
    for a span nothing exports. Callers then treat the tracer as a no-op one and mint
    the ids the log lines carry. Asked per request: a processor may be added to the
    provider at any time, and the next request records again. ``span_processor`` is
    the SDK tracer's multi-processor; if a future SDK drops ``_span_processors``, the
    tracer is treated as recording, as before.
    """
    if type(tracer) is trace.ProxyTracer:  # type(), not isinstance: these are ABCs
        tracer = getattr(tracer, "_tracer", tracer)
    if type(tracer) is trace.NoOpTracer:
        return True
    processors = getattr(getattr(tracer, "span_processor", None), "_span_processors", None)
    return processors is not None and len(processors) == 0


def request_context_for(
    span: trace.Span,
    carrier: Mapping[str, str] | None,
    request_id: str,
    x_request_id: str | None,
    extracted: Context | None = None,
    *,
    started: bool = False,
) -> RequestContext:
    """Ids for the log lines: the span's when it records, minted ones otherwise.

    Minting keeps ``trace_id`` / ``span_id`` on every line even without an SDK, so the
    span id stays a per-request key when request ids collide (docs/log-schema.md). A
    non-recording span (no SDK, or sampled out) may carry the *caller's* span context,
    whose span id is not this request's: keep the caller's trace and mint our own span.
    ``extracted``: what the configured propagators read from ``carrier``, if the caller
    extracted it (extracting again would repeat their warnings about a bad header). It
    is then the only word on the caller's trace: under ``OTEL_PROPAGATORS=none`` (or
    ``b3``) a ``traceparent`` the propagators did not read must not reach the lines
    either, or they named the caller's trace only when no span recorded the request.
    Without it, ``carrier`` is ridtrace's own (a gRPC stream item's) and is parsed.
    ``started``: `span` was started for this request, so a span context of its own that
    no caller gave it is the SDK's for a request its sampler left out: the span id that
    goes on to the next service (`propagate.inject`), which the lines then name too.
    """
    span_context = span.get_span_context() if span.is_recording() else None
    if span_context is not None and span_context.is_valid:
        parent = getattr(span, "parent", None)
        return RequestContext(  # positional: this runs on every request
            request_id,
            format(span_context.trace_id, "032x"),
            format(span_context.span_id, "016x"),
            x_request_id,
            format(parent.span_id, "016x") if parent is not None else None,
        )
    if extracted is not None:
        remote = _caller_ids(extracted)
    else:
        traceparent = carrier.get("traceparent") if carrier else None
        remote = parse_traceparent(traceparent) if traceparent else None
    own = span.get_span_context()
    if started and own.is_valid and not own.is_remote and (
            remote is None or format(own.span_id, "016x") != remote[1]):
        # A minted span id on the lines, another on the hop: the next service's
        # parent_span_id named no line of this one for every request sampled out.
        return RequestContext(request_id, format(own.trace_id, "032x"),
                              format(own.span_id, "016x"), x_request_id,
                              remote[1] if remote else None)
    if remote:
        return RequestContext(request_id, remote[0], mint_span_id(), x_request_id, remote[1])
    if own.is_valid and not own.is_remote:
        # A root the SDK's sampler left out: its trace id is the one the sampler judged.
        # A minted one went on the hop instead, and a worker sampling by trace id
        # (traceidratio) judged another trace: orphan spans under a parent never
        # exported. The span id is minted all the same: a span that is merely current
        # (an outer one, under a no-op tracer) is no key of this request's.
        return RequestContext(request_id, format(own.trace_id, "032x"), mint_span_id(),
                              x_request_id)
    return minted_context(request_id, x_request_id)


def _caller_ids(parent: Context) -> tuple[str, str] | None:
    """The caller's (trace_id, span_id) in the context the configured propagators
    extracted.

    A caller speaking another format than W3C (``OTEL_PROPAGATORS=b3``) had its trace
    dropped from the log lines whenever no span recorded the request (no collector, or
    sampled out), though a recording span continued it.
    """
    caller = trace.get_current_span(parent).get_span_context()
    if not caller.is_valid:
        return None
    return format(caller.trace_id, "032x"), format(caller.span_id, "016x")


def minted_context(request_id: str, x_request_id: str | None) -> RequestContext:
    """A context with a fresh trace id and span id, for a request no span records."""
    trace_id, span_id = mint_trace_span_ids()
    return RequestContext(request_id, trace_id, span_id, x_request_id)


def span_of_lines(ctx: RequestContext, stand_in: trace.Span) -> trace.Span:
    """A non-recording span named by the ids ``ctx``'s log lines carry, to make current
    while no span records the request (`records_nothing`).

    `propagate.inject` hands the current span on to the next service. Before, it was
    the caller's span (or none): under ``configure_tracing()`` with no endpoint, a
    gateway's call onward named the client's span as parent, or started a trace of its
    own, so the backend's lines linked to no line of the gateway's, and `analyze`
    counted each forwarded request twice (a false ``client_id_reuse`` for every id the
    gateway passed on). ``stand_in`` is the span the request would otherwise have had
    current: its sampled flag and trace state go on, as `frontend_plugin.hop` sends
    them to a worker (sampled when there is no caller: the next service decides).
    """
    caller = stand_in.get_span_context()
    flags = caller.trace_flags if caller.is_valid else TraceFlags(TraceFlags.SAMPLED)
    return NonRecordingSpan(SpanContext(
        int(ctx.trace_id, 16), int(ctx.span_id, 16), False, flags,
        caller.trace_state if caller.is_valid else None,
    ))
