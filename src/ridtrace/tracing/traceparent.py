"""W3C ``traceparent`` parsing and formatting, for propagation without an SDK (and the
same ids in the configured propagators' format, for receivers that read only that).

The parser accepts exactly what OpenTelemetry's W3C propagator accepts (lower-case hex,
version ``ff`` and all-zero ids refused, a suffix only after a version above ``00``), so
a request's log lines continue the caller's trace with or without an SDK installed.
"""

from __future__ import annotations

import re

from opentelemetry import propagate, trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

__all__ = [
    "format_traceparent",
    "parse_traceparent",
    "propagator_headers",
    "traceparent_span_context",
]

_TRACEPARENT = re.compile(
    r"^[ \t]*([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}(?:(-.*)|[ \t]*)$"
)
_MAX_LENGTH = 512  # as OpenTelemetry's propagator
_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16


def parse_traceparent(value: str | None) -> tuple[str, str] | None:
    """Return ``(trace_id, parent_span_id)`` of a valid header, else ``None``."""
    if not value or len(value) > _MAX_LENGTH:
        return None
    match = _TRACEPARENT.search(value)
    if match is None:
        return None
    version, trace_id, span_id, suffix = match.groups()
    if version == "ff" or (version == "00" and suffix):
        return None
    if trace_id == _ZERO_TRACE or span_id == _ZERO_SPAN:
        return None
    return trace_id, span_id


def traceparent_span_context(value: str | None) -> SpanContext | None:
    """The remote span context a valid ``traceparent`` names, with its sampled flag."""
    ids = parse_traceparent(value)
    if ids is None or value is None:
        return None
    flags = int(value.lstrip(" \t").split("-")[3][:2], 16) & TraceFlags.SAMPLED
    return SpanContext(int(ids[0], 16), int(ids[1], 16), True, TraceFlags(flags))


def format_traceparent(trace_id: str, span_id: str, *, sampled: bool = True) -> str:
    """A version-00 ``traceparent`` naming ``span_id`` as the parent."""
    return f"00-{trace_id}-{span_id}-{'01' if sampled else '00'}"


# (the global propagator, whether it writes traceparent): looked up once per propagator.
_writes: list[object] = [None, True]


def propagator_headers(trace_id: str, span_id: str, *, sampled: bool) -> dict[str, str]:
    """What :func:`format_traceparent` says, in the format of the configured propagators
    when they write no ``traceparent`` (``OTEL_PROPAGATORS=b3``); ``{}`` when they do.

    A receiver whose span records extracts with those propagators only: under b3 it
    ignored a ``traceparent`` sent alone and started a trace of its own.
    """
    textmap = propagate.get_global_textmap()
    if textmap is not _writes[0]:
        _writes[:] = [textmap, "traceparent" in textmap.fields]
    if _writes[1]:
        return {}
    flags = TraceFlags(TraceFlags.SAMPLED if sampled else TraceFlags.DEFAULT)
    ids = SpanContext(int(trace_id, 16), int(span_id, 16), False, flags)
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=trace.set_span_in_context(NonRecordingSpan(ids)))
    return carrier
