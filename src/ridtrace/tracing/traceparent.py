"""W3C ``traceparent`` parsing and formatting, for propagation without an SDK."""

from __future__ import annotations

import re

__all__ = ["format_traceparent", "parse_traceparent"]

_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")
_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16


def parse_traceparent(value: str | None) -> tuple[str, str] | None:
    """Return ``(trace_id, parent_span_id)`` of a valid header, else ``None``."""
    if not value or len(value) > 128:
        return None
    match = _TRACEPARENT.match(value.strip().lower())
    if match is None or match.group(1) == _ZERO_TRACE or match.group(2) == _ZERO_SPAN:
        return None
    return match.group(1), match.group(2)


def format_traceparent(trace_id: str, span_id: str, *, sampled: bool = True) -> str:
    """A version-00 ``traceparent`` naming ``span_id`` as the parent."""
    return f"00-{trace_id}-{span_id}-{'01' if sampled else '00'}"
