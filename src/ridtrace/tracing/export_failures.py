"""Each signal's failed exports said, when traces and metrics fail over gRPC together.

The OTLP/gRPC exporter module puts the SDK's ``DuplicateFilter`` on its logger: a record
with the same module, level and message template as the one before it, within the same
20 s, is dropped (so that a failing log export cannot log about itself for ever). Traces
and metrics share that logger and their templates ("Failed to export %s to %s, …"), so
when a collector was down at a stop, one signal's failure line was dropped, which one
varying run to run, and that signal's loss went unsaid. The same filter, keyed by the
signal a record names too, keeps the guard and says both.
"""

from __future__ import annotations

import logging
import time

__all__ = ["say_each_signals_failures"]

GRPC_EXPORTER_LOGGER = "opentelemetry.exporter.otlp.proto.grpc.exporter"
_SIGNALS = frozenset(("traces", "metrics", "logs"))
_WINDOW_SECONDS = 20  # the SDK filter's


class PerSignalDuplicateFilter(logging.Filter):
    """The SDK's ``DuplicateFilter``, one per signal a record names."""

    def __init__(self) -> None:
        super().__init__()
        self._last: dict[object, tuple[object, ...]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        signal = next((a for a in args if isinstance(a, str) and a in _SIGNALS), None)
        current = (record.module, record.levelno, record.msg,
                   time.time() // _WINDOW_SECONDS)
        if self._last.get(signal) == current:
            return False
        self._last[signal] = current
        return True


def say_each_signals_failures() -> None:
    """Swap the gRPC exporter logger's ``DuplicateFilter`` for the per-signal one (once;
    call after importing the exporter module, which adds the SDK's)."""
    logger = logging.getLogger(GRPC_EXPORTER_LOGGER)
    for kept in list(logger.filters):
        if type(kept).__name__ == "DuplicateFilter":
            logger.removeFilter(kept)
    if not any(isinstance(f, PerSignalDuplicateFilter) for f in logger.filters):
        logger.addFilter(PerSignalDuplicateFilter())
