"""When and how much telemetry is exported: the batch span processor's ``OTEL_BSP_*``
and the metric reader's ``OTEL_METRIC_EXPORT_*``, read from one mapping of OTEL_*
variables (as `tracing.otlp` reads the exporters' own), never from ``os.environ``
behind the caller's back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "batch_span_processor",
    "check_export_schedule",
    "export_timeout_seconds",
    "periodic_metric_reader",
]


def _positive(env: Mapping[str, str], key: str, default: int) -> int:
    """``key``'s positive integer, ``default`` when unset or empty. A 0 is no "unset"
    (OTEL_BSP_SCHEDULE_DELAY=0 silently held spans 5 s)."""
    raw = env.get(key, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise ValueError(f"{key}={raw!r}: not a positive integer")
    return value


_QUEUE_KEY, _BATCH_KEY = "OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"


def _queue_and_batch(env: Mapping[str, str]) -> tuple[int, int]:
    queue = _positive(env, _QUEUE_KEY, 2048)
    batch = _positive(env, _BATCH_KEY, min(512, queue))
    if batch > queue:
        raise ValueError(f"{_BATCH_KEY}={env[_BATCH_KEY].strip()!r}: a batch is at most the "
                         f"queue, {_QUEUE_KEY}='{queue}'")
    return queue, batch


def check_export_schedule(env: Mapping[str, str]) -> None:
    """Raise the ValueError that building the processor or the reader from ``env`` would,
    without building them (``ridtrace demo`` checks its processes' variables first)."""
    _queue_and_batch(env)
    for key in ("OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_EXPORT_TIMEOUT",
                "OTEL_METRIC_EXPORT_INTERVAL", "OTEL_METRIC_EXPORT_TIMEOUT"):
        _positive(env, key, 1)


def export_timeout_seconds(env: Mapping[str, str], signal: str) -> float:
    """``OTEL_BSP_EXPORT_TIMEOUT`` (traces) or ``OTEL_METRIC_EXPORT_TIMEOUT`` (metrics)
    in seconds: how long one export may take. The SDK's batch processor keeps its own
    unused and the OTLP metric exporters ignore the one their reader passes, so
    `tracing.otlp` bounds the exporter with it."""
    key = "OTEL_BSP_EXPORT_TIMEOUT" if signal == "traces" else "OTEL_METRIC_EXPORT_TIMEOUT"
    return _positive(env, key, 30000) / 1000


def batch_span_processor(exporter: Any, env: Mapping[str, str]) -> Any:
    """A batch span processor with ``OTEL_BSP_*`` taken from ``env`` (the SDK's defaults
    for what it does not set). A queue below the default batch (512) is the batch size,
    as in the Go and Java SDKs: the Python SDK refused ``OTEL_BSP_MAX_QUEUE_SIZE=256``
    alone, naming a setting nobody set ("max_export_batch_size must be less than or
    equal to max_queue_size."). A batch set above the queue is refused naming both."""
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from ridtrace.tracing.context import outside_requests

    class Processor(BatchSpanProcessor):
        def on_end(self, span: Any) -> None:
            # A span ends in its request's thread, and what the SDK logs there is about
            # its queue: "Queue full, dropping Span." (the oldest span queued, any
            # request's) carried the ids of whichever request ended a span then, a WARN
            # about the service read as one about that request.
            outside_requests(super().on_end, span)

    queue, batch = _queue_and_batch(env)
    return Processor(
        exporter,
        max_queue_size=queue,
        schedule_delay_millis=_positive(env, "OTEL_BSP_SCHEDULE_DELAY", 5000),
        max_export_batch_size=batch,
        export_timeout_millis=_positive(env, "OTEL_BSP_EXPORT_TIMEOUT", 30000),
    )


def periodic_metric_reader(exporter: Any, env: Mapping[str, str]) -> Any:
    """A periodic reader with ``OTEL_METRIC_EXPORT_INTERVAL`` / ``_TIMEOUT`` from ``env``."""
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    return PeriodicExportingMetricReader(
        exporter,
        export_interval_millis=_positive(env, "OTEL_METRIC_EXPORT_INTERVAL", 60000),
        export_timeout_millis=_positive(env, "OTEL_METRIC_EXPORT_TIMEOUT", 30000),
    )
