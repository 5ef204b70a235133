"""What a ridtrace interceptor sets while the interceptors after it look up the handler."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from opentelemetry import context as otel_context

__all__ = ["instrumentation_suppressed", "traced_outside"]

# Set (in OpenTelemetry's context, beside its suppress flag) while the interceptors
# after a ridtrace interceptor look up the handler: a second one in the chain (a
# framework's and the application's) passes the call on, as a nested HTTP middleware
# does, so a call keeps one request_id, one span and one request.start / request.end.
_TRACED_OUTSIDE = otel_context.create_key("ridtrace-grpc-call-traced")


@contextlib.contextmanager
def instrumentation_suppressed() -> Iterator[None]:
    """OpenTelemetry's "suppress instrumentation" flag, while the interceptors listed
    after this one look up the handler.

    opentelemetry-instrumentation-grpc's server interceptor listed after ridtrace's
    opened a second server span per call, a root of its own trace beside ridtrace's
    (it continues the metadata's trace context, not the current span). It checks the
    flag when it wraps the handler and then adds nothing; listed before ridtrace, it
    has already wrapped, and ridtrace enriches its span instead. Another ridtrace
    interceptor after this one sees ``_TRACED_OUTSIDE`` and passes the call on.
    """
    suppressed = otel_context.set_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY, True)
    token = otel_context.attach(otel_context.set_value(_TRACED_OUTSIDE, True, suppressed))
    try:
        yield
    finally:
        otel_context.detach(token)


def traced_outside() -> bool:
    """Whether a ridtrace interceptor listed before this one traces the call."""
    return bool(otel_context.get_value(_TRACED_OUTSIDE))
