"""FastAPI's automatic OTLP set-up kept off the providers ridtrace already exports from.

With ``FASTAPI_OTEL_AUTO_CONFIGURE=true`` (or ``FastAPI(telemetry={"auto_configure":
True})``) FastAPI adds an OTLP exporter of its own to the global tracer and meter
providers at its lifespan startup, whatever those export already. Beside
``configure_tracing`` / ``configure_metrics`` every span and every metric export then
reached the collector twice (3 requests: 6 spans; 2 exports of the same series).
FastAPI skips a provider it counts as configured for a signal, so ridtrace's exporting
providers are entered there as such. FastAPI keeps that record in its telemetry
runtime, which has no public way in: a FastAPI laid out otherwise is left alone.
"""

from __future__ import annotations

import sys
import threading

__all__ = ["claim_exports", "exports_over_otlp"]

# FastAPI's names for the signals.
_SIGNALS = {"traces": "TRACES", "metrics": "METRICS"}
# (FastAPI's signal name, provider): ridtrace's global providers that export over OTLP.
_exporting: list[tuple[str, object]] = []
_lock = threading.Lock()


def exports_over_otlp(signal: str, provider: object) -> None:
    """Record that ``provider``, set globally, exports ``signal`` (``traces``,
    ``metrics``) over OTLP, so that FastAPI's automatic set-up adds no exporter to it."""
    with _lock:
        _exporting.append((_SIGNALS[signal], provider))
    claim_exports()


def claim_exports() -> None:
    """Enter the providers :func:`exports_over_otlp` recorded as configured in FastAPI's
    telemetry runtime, once FastAPI is imported (it reads the record at its lifespan
    startup, after the middleware is built). Never imports FastAPI itself: a service
    without it must not pay for its import."""
    if "fastapi" not in sys.modules:
        return
    try:
        from fastapi.telemetry import _runtime

        configured, runtime_lock = _runtime._configured, _runtime._lock
    except (ImportError, AttributeError):  # a FastAPI without it, or laid out otherwise
        return
    with _lock, runtime_lock:
        for signal, provider in _exporting:
            if not any(s == signal and p is provider for s, p in configured):
                configured.append((signal, provider))
