"""Reading a caller's trace context with at most one propagator warning per request.

OpenTelemetry's propagators log a WARN for each part of a trace header they drop, and
the W3C baggage propagator does so per entry (not ASCII, not ``key=value``, too long),
entries that do not count towards its 180-entry limit: one 5 KiB ``baggage`` header of
2700 one-byte entries wrote 2700 lines into the log, for any caller, on every request,
and without the request's ids (the context is read before the request's own exists).
Here the propagators' records of one extraction are held back; the first is written
once the request's context is current, saying how many more there were.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.context import Context, get_current
from opentelemetry.propagators.textmap import Getter
from opentelemetry.trace import NonRecordingSpan

from ridtrace.tracing.inbound import TRACE_HEADERS
from ridtrace.tracing.traceparent import traceparent_span_context

__all__ = ["HeldWarnings", "extract", "extracted_header_names", "holding"]

# The loggers the API's propagators (W3C trace context, tracestate, baggage) write to.
_PROPAGATOR_LOGGERS = (
    "opentelemetry.baggage.propagation",
    "opentelemetry.trace.propagation.tracecontext",
    "opentelemetry.trace.span",
)


# What OpenTelemetry's B3 propagators read, whichever format they write (``b3`` the
# single header, ``b3multi`` the X-B3-* ones): their ``fields`` name only the headers
# they inject, and X-B3-Flags (debug, which samples) in neither.
_B3_HEADERS = frozenset({"b3", "x-b3-traceid", "x-b3-spanid", "x-b3-sampled", "x-b3-flags"})


# Propagators that read no header beyond their fields (B3's with _B3_HEADERS): W3C
# trace context and baggage, B3, AWS X-Ray. Others (Jaeger's `uberctx-*` baggage, OT's
# `ot-baggage-*`, an in-house one) may read any header, through the getter's `keys`.
_FIELDS_ONLY = (
    "opentelemetry.trace.propagation.tracecontext",
    "opentelemetry.baggage.propagation",
    "opentelemetry.propagators.b3",
    "opentelemetry.propagators.aws",
)


def extracted_header_names() -> tuple[str, ...] | None:
    """The headers (metadata keys) to collect for the configured propagators' extraction;
    ``None`` for every header, when a propagator may read headers it cannot name.

    A propagator's ``fields`` are what it writes, not all it reads: collected alone,
    under ``OTEL_PROPAGATORS=b3`` the X-B3-* headers Envoy, Istio and Zipkin's libraries
    send never reached the propagator, and every request behind them began a new trace;
    under ``jaeger`` a caller's ``uberctx-*`` baggage never reached the app.
    """
    textmap = propagate.get_global_textmap()
    # OTEL_PROPAGATORS builds a composite; its parts are not public API (none under
    # OTEL_PROPAGATORS=none, which reads no header at all).
    parts = getattr(textmap, "_propagators", None)
    if parts is None:
        parts = [textmap]
    if any(not type(part).__module__.startswith(_FIELDS_ONLY) for part in parts):
        return None
    fields = set(textmap.fields)
    if fields & _B3_HEADERS:
        fields |= _B3_HEADERS
    return (*TRACE_HEADERS, *sorted(fields))


class _CarrierGetter(Getter[dict[str, str]]):
    """OpenTelemetry getter over the trace headers (metadata) a request sent, names in
    lower case as servers hand them over.

    Looked up in lower case: a propagator may ask for its header as it is spelt (AWS
    X-Ray's ``X-Amzn-Trace-Id``), and an exact lookup never found it, so every X-Ray
    caller's trace was lost. OpenTelemetry's ASGI instrumentation compares the same way.
    """

    def get(self, carrier: dict[str, str], key: str) -> list[str] | None:
        value = carrier.get(key)
        if value is None:
            value = carrier.get(key.lower())
        return None if value is None else [value]

    def keys(self, carrier: dict[str, str]) -> list[str]:
        return list(carrier)


CARRIER_GETTER = _CarrierGetter()


class HeldWarnings:
    """The propagator warnings of one extraction: the first record and how many more."""

    __slots__ = ("about", "first", "more")

    def __init__(self, about: str = "this request's trace headers") -> None:
        self.about = about
        self.first: logging.LogRecord | None = None
        self.more = 0

    def write(self) -> None:
        """Write the first warning, naming how many more were left out (call it once the
        request's context is current, so the line carries the request's ids)."""
        record, self.first = self.first, None
        if record is None:
            return
        if self.more:
            record.msg = (f"{record.getMessage()} (and {self.more} more warnings about "
                          f"{self.about}, not written)")
            record.args = None
        logging.getLogger(record.name).handle(record)


_holding: ContextVar[HeldWarnings | None] = ContextVar("ridtrace_propagator_warnings",
                                                      default=None)


class _HoldDuringExtraction(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        held = _holding.get()
        if held is None:
            return True  # not ours to hold: another instrumentation's extraction
        if held.first is None:
            held.first = record
        else:
            held.more += 1
        return False


_FILTER = _HoldDuringExtraction()
_installed: set[str] = set()  # the loggers _FILTER is on


@contextmanager
def holding(held: HeldWarnings, loggers: tuple[str, ...]) -> Iterator[HeldWarnings]:
    """Hold back what ``loggers`` write in this block into ``held``, to be written
    (:meth:`HeldWarnings.write`) once the request's context is current."""
    for name in loggers:
        if name not in _installed:
            logging.getLogger(name).addFilter(_FILTER)
            _installed.add(name)
    token = _holding.set(held)
    try:
        yield held
    finally:
        _holding.reset(token)


def extract(
    carrier: Any, getter: Getter[Any] = CARRIER_GETTER, *, traceparent: bool = False
) -> tuple[Context, HeldWarnings]:
    """``propagate.extract(carrier)``, with the propagators' warnings held back.

    Always a context: under ``OTEL_PROPAGATORS=none`` OpenTelemetry's composite of no
    propagators hands back ``None``, which callers could not tell from "not extracted"
    (and then read the caller's ``traceparent`` themselves). The current context stands
    in for it, as ``None`` does for a span's parent: an empty one made the span a root
    beside a sampled-out span already current (FastAPI's own), exported all the same.

    With ``traceparent``, a W3C ``traceparent`` names the caller when the configured
    propagators found none (``OTEL_PROPAGATORS=none``): ridtrace's worker reads its
    frontend's hop so, see :attr:`TracingSettings.read_traceparent`.
    """
    with holding(HeldWarnings(), _PROPAGATOR_LOGGERS) as held:
        extracted = propagate.extract(carrier, getter=getter)
        if extracted is None:
            extracted = get_current()
        if traceparent:
            extracted = _or_traceparent(extracted, carrier, getter)
        return extracted, held


def _or_traceparent(extracted: Context, carrier: Any, getter: Getter[Any]) -> Context:
    """``extracted``, or the caller the carrier's ``traceparent`` names in it when the
    propagators found none."""
    if trace.get_current_span(extracted).get_span_context().is_valid:
        return extracted
    values = getter.get(carrier, "traceparent")
    caller = traceparent_span_context(values[0]) if values and len(values) == 1 else None
    if caller is None:
        return extracted
    return trace.set_span_in_context(NonRecordingSpan(caller), extracted)
