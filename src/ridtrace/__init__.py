"""ridtrace: server-minted request identity, traces and log forensics.

The tracing layer is re-exported eagerly (it is light); nothing here imports pandas,
click or the frontend plugin's FastAPI routes.
"""

from ridtrace.tracing import (
    DEFAULT_DEPRECATED_HEADERS,
    LOG_SCHEMA,
    RequestContext,
    RequestTracingMiddleware,
    TracingSettings,
    annotate_request,
    configure_logging,
    configure_metrics,
    configure_tracing,
    current_context,
    current_request_id,
    current_x_request_id,
    shutdown_telemetry,
    telemetry_lifespan,
    uuid4_id,
    uuid7_id,
)

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_DEPRECATED_HEADERS",
    "LOG_SCHEMA",
    "RequestContext",
    "RequestTracingMiddleware",
    "TracingSettings",
    "__version__",
    "annotate_request",
    "configure_logging",
    "configure_metrics",
    "configure_tracing",
    "current_context",
    "current_request_id",
    "current_x_request_id",
    "shutdown_telemetry",
    "telemetry_lifespan",
    "uuid4_id",
    "uuid7_id",
]
