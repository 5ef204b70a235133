"""What every call of one interceptor compares or needs, computed once: the id header
names, the inbound rules, the deprecation notices, the tracer and the id generator."""

from __future__ import annotations

from collections.abc import Callable

from opentelemetry import trace

from ridtrace import __version__
from ridtrace.tracing.deprecation import deprecation_response_headers
from ridtrace.tracing.grpc.context import Metadata
from ridtrace.tracing.grpc.excluded import excluded_services
from ridtrace.tracing.inbound import InboundRules
from ridtrace.tracing.propagation import extracted_header_names
from ridtrace.tracing.settings import TracingSettings

__all__ = ["CallConfig"]


class CallConfig:
    """Everything a call compares or needs, computed once per interceptor."""

    __slots__ = ("body_id_field", "client_key", "excluded_services", "log_lifecycle",
                 "max_len", "mint", "notices", "owned_keys", "response_key", "rules",
                 "server_key_only", "tracer")

    def __init__(self, settings: TracingSettings, *, body_id_field: str = "id") -> None:
        # gRPC metadata keys are lower-case on the wire; compare lower-case str once.
        self.client_key = settings.client_id_header.lower()
        self.response_key = settings.response_id_header.lower()
        self.rules: InboundRules[str] = InboundRules(
            client_header=settings.client_id_header,
            deprecated_headers=settings.deprecated_headers,
            max_length=settings.max_client_id_length,
            as_bytes=False,
            # The keys the configured propagators read (b3 …), as the HTTP middleware
            # collects them: only the W3C ones were, so a b3 caller's trace was lost.
            trace_headers=extracted_header_names(),
        )
        self.owned_keys = frozenset({self.client_key, self.response_key})
        self.server_key_only = frozenset({self.response_key})
        self.notices: Metadata = tuple(
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, value in deprecation_response_headers(
                deprecation_at=settings.deprecation_at,
                sunset_at=settings.sunset_at,
                link=settings.deprecation_link,
            )
        )
        provider = settings.tracer_provider or trace.get_tracer_provider()
        self.tracer = provider.get_tracer("ridtrace.tracing", __version__)
        self.mint: Callable[[], str] = settings.id_generator
        self.max_len = settings.max_client_id_length
        self.log_lifecycle = settings.log_lifecycle
        self.body_id_field = body_id_field
        self.excluded_services = excluded_services()
