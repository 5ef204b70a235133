"""Whether the stack's sampler keeps a demo call's trace, asked as the servers ask it.

The demo names one request to search for in Jaeger. Under ``OTEL_TRACES_SAMPLER``
(``always_off``, ``traceidratio``) the servers keep some traces or none, and the one
named was dropped in most runs: "spans were exported … search tags request_id=…"
led to an empty search. The servers build their sampler from the same environment
(the demo's processes inherit it), and every sampler the SDK names decides from the
trace id and the caller's sampled flag alone, which the demo chose itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def first_kept(traceparents: Iterable[str | None]) -> int | None:
    """The index of the first `traceparent` whose server span would be sampled, or None.
    The sampler is built once, from ``OTEL_TRACES_SAMPLER`` as the servers build theirs."""
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.sampling import Decision
        from opentelemetry.trace.propagation.tracecontext import (
            TraceContextTextMapPropagator,
        )
    except ImportError:  # no SDK: nothing is exported, and no example is named anyway
        return None
    sampler = TracerProvider().sampler
    propagator = TraceContextTextMapPropagator()
    for index, traceparent in enumerate(traceparents):
        carrier: dict[str, Any] = {"traceparent": traceparent} if traceparent else {}
        parent = propagator.extract(carrier)
        span_context = trace.get_current_span(parent).get_span_context()
        if not span_context.is_valid:
            continue
        result = sampler.should_sample(parent, span_context.trace_id, "http-request",
                                       kind=trace.SpanKind.SERVER)
        if result.decision is Decision.RECORD_AND_SAMPLE:
            return index
    return None
