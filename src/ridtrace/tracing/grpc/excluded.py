"""gRPC services no span is wanted for (health checks, reflection), as OpenTelemetry's
own gRPC instrumentation is told: ``OTEL_PYTHON_GRPC_EXCLUDED_SERVICES``, a comma-separated
list of full service names (``grpc.health.v1.Health``). A call to one still gets its ids,
lines and metrics; only its span is left out, as the instrumentation leaves out its own.
"""

from __future__ import annotations

import os

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import INVALID_SPAN, INVALID_SPAN_CONTEXT, NonRecordingSpan

__all__ = ["excluded_services", "quiet_span"]

_VARIABLE = "OTEL_PYTHON_GRPC_EXCLUDED_SERVICES"


def excluded_services() -> frozenset[str]:
    """The services the variable names (split and stripped as the instrumentation does);
    read when the interceptor is built, as the HTTP middleware reads its excluded URLs."""
    names = os.environ.get(_VARIABLE, "").split(",")
    return frozenset(name.strip() for name in names if name.strip())


def quiet_span(parent: Context | None) -> trace.Span:
    """What stands for the span of an excluded call: the caller's span context, so the
    handler's own calls onward continue the caller's trace (and its baggage stays
    current), or a non-recording span of the call's own when the caller sent none."""
    span = trace.get_current_span(parent) if parent is not None else INVALID_SPAN
    return NonRecordingSpan(INVALID_SPAN_CONTEXT) if span is INVALID_SPAN else span
