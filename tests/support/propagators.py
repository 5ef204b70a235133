"""Propagators that read headers as AWS X-Ray's and Jaeger's do: in mixed case, or beyond
their fields."""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.propagators.textmap import TextMapPropagator
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

__all__ = ["XRAY_HEADER", "XRAY_PARENT", "XRAY_TRACE", "JaegerLikePropagator", "XRayLikePropagator"]

# A sampled X-Ray trace header, and the trace and parent span ids it names.
XRAY_HEADER = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
XRAY_TRACE = "5759e988bd862e3fe1be46a994272793"
XRAY_PARENT = "53995c3f42cd8ad8"


class XRayLikePropagator(TextMapPropagator):
    """Reads its header as AWS X-Ray's propagator does: asking the getter for the name
    as the header is spelt, ``X-Amzn-Trace-Id``, not in lower case."""

    KEY = "X-Amzn-Trace-Id"

    def extract(self, carrier: Any, context: Context | None = None,
                getter: Any = None) -> Context:
        values = getter.get(carrier, self.KEY) if getter is not None else None
        if not values:
            return context if context is not None else Context()
        fields = dict(part.split("=", 1) for part in values[0].split(";"))
        trace_id = int(fields["Root"].split("-", 1)[1].replace("-", ""), 16)
        caller = SpanContext(trace_id, int(fields["Parent"], 16), True,
                             TraceFlags(int(fields.get("Sampled", "0"))))
        return trace.set_span_in_context(NonRecordingSpan(caller), context)

    def inject(self, carrier: Any, context: Context | None = None, setter: Any = None) -> None:
        pass  # extraction is what the tests look at

    @property
    def fields(self) -> set[str]:
        return {self.KEY}


class JaegerLikePropagator(TextMapPropagator):
    """Reads baggage as Jaeger's propagator does: every header whose name begins
    ``uberctx-``, found through the getter's ``keys``, though its ``fields`` name only
    ``uber-trace-id``."""

    TRACE_ID_KEY = "uber-trace-id"
    BAGGAGE_PREFIX = "uberctx-"

    def extract(self, carrier: Any, context: Context | None = None,
                getter: Any = None) -> Context:
        from opentelemetry import baggage

        context = context if context is not None else Context()
        for key in getter.keys(carrier) if getter is not None else ():
            if key.startswith(self.BAGGAGE_PREFIX):
                value = getter.get(carrier, key)[0]
                context = baggage.set_baggage(key[len(self.BAGGAGE_PREFIX):], value, context)
        return context

    def inject(self, carrier: Any, context: Context | None = None, setter: Any = None) -> None:
        pass  # extraction is what the tests look at

    @property
    def fields(self) -> set[str]:
        return {self.TRACE_ID_KEY}
