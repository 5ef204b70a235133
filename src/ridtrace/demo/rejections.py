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

__all__ = ["SpanRejections"]

_LOGGER = "ridtrace.tracing.otlp_partial"
_SAID = " spans of an export"  # how its WARN speaks of rejected spans


class SpanRejections(logging.Filter):
    """From its making, notes the first rejection of spans said in this process (the
    records pass on as they are)."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: str | None = None
        logging.getLogger(_LOGGER).addFilter(self)

    def filter(self, record: logging.LogRecord) -> bool:
        if self._seen is None and _SAID in record.getMessage():
            self._seen = record.getMessage()
        return True

    def first(self, out_dir: Path) -> str | None:
        """What the collector said of the first spans it rejected, here or in a log of
        the stack's processes under ``out_dir``; ``None`` when it kept them all. Stops
        looking in this process."""
        logging.getLogger(_LOGGER).removeFilter(self)
        return self._seen or _logged(out_dir)


def _logged(out_dir: Path) -> str | None:
    for log in sorted(out_dir.glob("*/logs/*.jsonl")):
        try:
            raw_lines = log.read_bytes().splitlines()
        except OSError:
            continue
        for raw in raw_lines:
            if _LOGGER.encode() not in raw:
                continue
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if (isinstance(line, dict) and line.get("logger") == _LOGGER
                    and _SAID in str(line.get("message", ""))):
                return str(line["message"])
    return None
