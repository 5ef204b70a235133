"""Whether the collector the demo's spans went to kept them all: its partial success
(`tracing.otlp_partial`) as the stack's processes logged it, and as the demo's own
callers' exporter said it.

The demo ended with "spans were exported to …" whatever the collector answered: one
that rejected spans (over a quota, too large, too old) left traces with holes in
Jaeger, under the line that sent the user to search for them there.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from ridtrace.tracing.identity import shown_text

__all__ = ["SpanRejections"]

_LOGGER = "ridtrace.tracing.otlp_partial"
_SAID = " spans of an export"  # how its WARN speaks of rejected spans
# The OTLP exporters' own loggers, which say an export of spans that failed (a collector
# that never answered, refused, or was not there): those spans were dropped.
_EXPORTERS = ("opentelemetry.exporter.otlp.common.http",
              "opentelemetry.exporter.otlp.proto.http.trace_exporter",
              "opentelemetry.exporter.otlp.proto.grpc.exporter")
_FAILED = ("Failed to export spans", "Failed to export traces")
_METRICS_FAILED = "Failed to export metrics"
_RETRYING = "Transient error"  # both exporters' words for an export they will retry
_SHOWN = 1024  # characters of a collector's message the demo prints at most
_METRICS_SAID = " data points of an export"  # `otlp_partial`'s WARN of rejected metrics
SPANS, METRICS = "spans", "metrics"


def _says_lost(logger: str, message: str) -> str | None:
    """Which signal `message` says the collector did not take (None: neither)."""
    exporter = logger.startswith("opentelemetry.exporter.otlp")
    if (logger == _LOGGER and _SAID in message) or (exporter and message.startswith(_FAILED)):
        return SPANS
    if ((logger == _LOGGER and _METRICS_SAID in message)
            or (exporter and message.startswith(_METRICS_FAILED))):
        return METRICS
    return None


class SpanRejections(logging.Filter):
    """From its making, notes the first rejection of spans, or failed export of them,
    said in this process (those records go no further; every other passes on).

    A collector that accepted connections but never answered left every export failed
    ("Failed to export spans batch due to timeout …" in every log) under "spans were
    exported to …"."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: dict[str, str] = {}
        for name in (_LOGGER, *_EXPORTERS):
            logging.getLogger(name).addFilter(self)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        signal = _says_lost(record.name, message)
        if signal is not None:
            # The collector's own words are in it (a partial success's message): printed
            # raw, a line break or an escape sequence reached the user's terminal.
            self._seen.setdefault(signal, shown_text(message, _SHOWN))
        # Noted, not printed: the demo says it in one line of its own at the end (the
        # exporter's line came between its tables, twice, in OpenTelemetry's words). An
        # exporter's retry ("Transient error … retrying") is no loss yet: not printed
        # either (ten such lines on stderr for a collector answering 503).
        return signal is None and not (
            record.name.startswith("opentelemetry.exporter.otlp")
            and message.startswith(_RETRYING))

    def first(self, out_dir: Path, signal: str = SPANS) -> str | None:
        """What was said of the first spans (or metrics) the collector rejected or did
        not take, here or in a log of the stack's processes under ``out_dir``; ``None``
        when it kept them all. Stops looking in this process."""
        for name in (_LOGGER, *_EXPORTERS):
            logging.getLogger(name).removeFilter(self)
        return self._seen.get(signal) or _logged(out_dir, signal)


def _logged(out_dir: Path, signal: str) -> str | None:
    words = (b"spans", b"traces") if signal == SPANS else (b"metrics", b"data points")
    for log in sorted(out_dir.glob("*/logs/*.jsonl")):
        try:
            raw_lines = log.read_bytes().splitlines()
        except OSError:
            continue
        for raw in raw_lines:
            if not any(word in raw for word in words):
                continue
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if isinstance(line, dict) and _says_lost(
                    str(line.get("logger", "")), str(line.get("message", ""))) == signal:
                return str(line["message"])
    return None
