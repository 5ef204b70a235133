"""ridtrace: server-minted request identity, traces and log forensics.

The tracing layer is the flat public API, but it is imported on first use (PEP 562):
``import ridtrace.cli`` or ``ridtrace.forensics`` must not pay for loguru, OpenTelemetry
and asyncio, which `ridtrace analyze` never uses. Nothing here imports pandas, click or
the frontend plugin's FastAPI routes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ridtrace.lazy_names import lazy_names

if TYPE_CHECKING:
    from ridtrace.tracing import (
        DEFAULT_DEPRECATED_HEADERS,
        LOG_SCHEMA,
        RequestContext,
        RequestIdsFilter,
        RequestTracingMiddleware,
        TracingSettings,
        add_request_ids,
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
    "RequestIdsFilter",
    "RequestTracingMiddleware",
    "TracingSettings",
    "__version__",
    "add_request_ids",
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

# Hidden from type checkers: a module `__getattr__` makes every name, a misspelt one
# too, type as Any; they read the real names from the TYPE_CHECKING imports above.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_names(
        globals(), {name: "ridtrace.tracing" for name in __all__ if name != "__version__"}
    )
