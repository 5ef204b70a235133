"""ridtrace.tracing: server-minted request identity, spans and log context for ASGI apps.

Importing this package must stay cheap: no pandas, no click, no FastAPI routing.
"""

from ridtrace.tracing.context import (
    RequestContext,
    annotate_request,
    annotate_span,
    current_context,
    current_request_id,
    current_x_request_id,
)
from ridtrace.tracing.identity import uuid4_id, uuid7_id, validate_client_id
from ridtrace.tracing.lifecycle import shutdown_telemetry, telemetry_lifespan
from ridtrace.tracing.log_ids import RequestIdsFilter, add_request_ids
from ridtrace.tracing.logs import LOG_SCHEMA, configure_logging
from ridtrace.tracing.meters import configure_metrics
from ridtrace.tracing.middleware import RequestTracingMiddleware
from ridtrace.tracing.settings import DEFAULT_DEPRECATED_HEADERS, TracingSettings
from ridtrace.tracing.spans import configure_tracing
from ridtrace.tracing.traceparent import format_traceparent, parse_traceparent

__all__ = [
    "DEFAULT_DEPRECATED_HEADERS",
    "LOG_SCHEMA",
    "RequestContext",
    "RequestIdsFilter",
    "RequestTracingMiddleware",
    "TracingSettings",
    "add_request_ids",
    "annotate_request",
    "annotate_span",
    "configure_logging",
    "configure_metrics",
    "configure_tracing",
    "current_context",
    "current_request_id",
    "current_x_request_id",
    "format_traceparent",
    "parse_traceparent",
    "shutdown_telemetry",
    "telemetry_lifespan",
    "uuid4_id",
    "uuid7_id",
    "validate_client_id",
]
