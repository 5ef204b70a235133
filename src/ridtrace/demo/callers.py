"""The demo callers' own spans: the root of each trace the frontend continues.

Every call sends a ``traceparent`` (the plan's ids, which match findings to calls). With
an OTLP endpoint set, the frontend's server span named that caller span as its parent,
but nothing exported it: Jaeger showed every demo trace with a missing root ("invalid
parent span"). Each call now exports a ``CLIENT`` span carrying exactly the ids of its
``traceparent``, under the service ``client`` (as the stack's processes are
``frontend`` and ``worker-PORT``), with the run's resource attributes.
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from ridtrace.demo.plan import CallResult, PlannedCall
from ridtrace.tracing import lifecycle
from ridtrace.tracing.otlp_endpoints import otlp_export_endpoint
from ridtrace.tracing.spans import configure_tracing, sdk_disabled
from ridtrace.tracing.traceparent import propagator_headers

__all__ = ["CALLER_SERVICE", "CallerSpans"]

CALLER_SERVICE = "client"


class _PlannedIds(RandomIdGenerator):
    """Hands the SDK the ids of the call about to start (``start_span`` is synchronous
    and the callers share one event loop, so nothing starts in between). A
    RandomIdGenerator by type, what the provider's attribute is declared as."""

    def __init__(self) -> None:
        self.trace_id = 0
        self.span_id = 0

    def generate_trace_id(self) -> int:
        return self.trace_id

    def generate_span_id(self) -> int:
        return self.span_id


def _planned_ids(call: PlannedCall) -> tuple[int, int]:
    _, trace_id, span_id, _ = call.headers["traceparent"].split("-")
    return int(trace_id, 16), int(span_id, 16)


def _client_id(call: PlannedCall) -> str | None:
    return call.headers.get("x-request-id") or call.body_client_id


class CallerSpans:
    """One client span per call, exported like the stack's spans; a no-op without an
    OTLP endpoint (nothing would show them)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._provider: TracerProvider | None = None
        self._tracer: Tracer | None = None
        self._ids = _PlannedIds()
        if sdk_disabled(env) or otlp_export_endpoint(env, "traces") is None:
            return
        provider = configure_tracing(CALLER_SERVICE, environ=env, set_global=False)
        provider.id_generator = self._ids
        self._provider = provider
        self._tracer = provider.get_tracer("ridtrace.demo")

    def start(self, call: PlannedCall, base_url: str | httpx.URL) -> Span | None:
        """The call's span, with the ids its ``traceparent`` sends (a root span), sent to
        the frontend at ``base_url``."""
        if self._tracer is None:
            return None
        self._ids.trace_id, self._ids.span_id = _planned_ids(call)
        url = httpx.URL(str(base_url).rstrip("/") + call.route)
        return self._tracer.start_span(
            f"POST {call.route}",
            kind=SpanKind.CLIENT,
            attributes={
                # What the HTTP client conventions require: without the server's address
                # a backend's service graph and peer views had no callee to name.
                "http.request.method": "POST",
                "url.full": str(url),
                "server.address": url.host,
                "server.port": url.port or (443 if url.scheme == "https" else 80),
                "url.path": call.route,
                # The correlation id the call sent, in a header or (generate routes)
                # in its body, so x_request_id=… in Jaeger finds the trace's root too.
                **({"x_request_id": x} if (x := _client_id(call)) else {}),
            },
        )

    @staticmethod
    def headers(call: PlannedCall, span: Span | None) -> dict[str, str]:
        """The call's headers, its ``traceparent`` sampled as the caller's span was.

        The plan's header always said sampled: under a parent-based ratio sampler the
        stack recorded every call, and a trace whose root the caller's sampler had
        left out arrived without it.
        """
        sampled = span is None or span.get_span_context().trace_flags.sampled
        headers = call.headers
        if not sampled:
            headers = {**headers, "traceparent": headers["traceparent"][:-2] + "00"}
        # In the stack's format too (OTEL_PROPAGATORS=b3): its recording frontend read
        # only that, so every call began a trace of its own, no finding matched the call
        # that saw it, and the demo's proof failed.
        _, trace_id, span_id, _ = call.headers["traceparent"].split("-")
        extra = propagator_headers(trace_id, span_id, sampled=sampled)
        return {**headers, **extra} if extra else headers

    @staticmethod
    def end(span: Span | None, result: CallResult, error_type: str | None = None) -> None:
        """End ``span`` with what the caller saw; ``error_type``: the class of the
        exception that left the call without an answer."""
        if span is None:
            return
        if result.status:
            span.set_attribute("http.response.status_code", result.status)
        if result.server_request_id:
            span.set_attribute("request_id", result.server_request_id)
        if result.disconnected:
            span.set_attribute("disconnected", True)
        # A 4xx or 5xx is a failed call even when the caller walked away on purpose after
        # it (no error recorded): its span said nothing went wrong, its frontend's did.
        if result.error is not None or not result.status or result.status >= 400:
            # `error.type`, as the conventions ask of every failed call, so errors can be
            # told apart by kind: the status of a 4xx/5xx answer, the exception's class
            # for none, _OTHER for an error inside a 200 (a stream's error event).
            span.set_attribute("error.type", str(result.status) if result.status >= 400
                               else error_type or "_OTHER")
            span.set_status(Status(StatusCode.ERROR, result.error or f"HTTP {result.status}"))
        span.end()

    def shutdown(self) -> None:
        """Export what is still queued, for at most the exporter's timeout and a margin
        (tracing.md, Nothing lost at shutdown), as the stack's processes do."""
        if self._provider is not None:
            lifecycle.shutdown_provider(self._provider)
