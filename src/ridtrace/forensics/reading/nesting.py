"""Rust tracing-subscriber's nested JSON, flattened as Dynamo's JSONL writes it.

A Rust service logging with tracing-subscriber's own JSON formatter nests what Dynamo's
JSONL writes flat (``fields``, ``span``, ``spans``): read as they were, its lines had no
ids and its requests were silently lost.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ridtrace.forensics.reading.unwrap_parts import (
    LineByLine,
    Unwrapper,
    each_object,
    json_objects,
)


class TracingJsonUnwrapper(LineByLine):
    """Rust tracing-subscriber's JSON formatter: the event's fields under ``fields``
    (unless ``flatten_event``), the current span's under ``span``, every open span's in
    ``spans`` (outermost first), the time in ``timestamp``. Flattened to one object as
    Dynamo's JSONL writes it: the line's own keys first, then the event's fields, then
    the spans' from the innermost out (a span's ``name`` is ``span_name``)."""

    name = "tracing-subscriber JSON"

    def unwrap(self, line: bytes, number: int) -> bytes:
        return each_object(line, _flattened)


def _flattened(entry: dict[str, Any]) -> bytes:
    """One tracing-subscriber record, flat (`TracingJsonUnwrapper`)."""
    # A line outside any span, with flatten_event, has no nesting: its time is still
    # in "timestamp".
    flat = {k: v for k, v in entry.items() if k not in _NESTING}
    if "time" not in flat and "timestamp" in flat:
        flat["time"] = flat["timestamp"]
    fields = entry.get("fields")
    if isinstance(fields, dict):
        for key, value in fields.items():
            flat.setdefault(key, value)
    spans = entry.get("spans")
    nested = [entry.get("span"), *(reversed(spans) if isinstance(spans, list) else ())]
    for span in nested:
        if isinstance(span, dict):
            for key, value in span.items():
                flat.setdefault("span_name" if key == "name" else key, value)
    return json.dumps(flat, separators=(",", ":")).encode()


_NESTING = ("fields", "span", "spans")


def has_nesting(entry: dict[str, Any]) -> bool:
    return (isinstance(entry.get("fields"), dict) or isinstance(entry.get("span"), dict)
            or isinstance(entry.get("spans"), list))


# tracing-subscriber's nesting, wherever it is among the first lines: a service's first
# lines (start-up messages) are often outside any span.
_NESTING_KEY = re.compile(rb'"(?:fields|span)"\s*:\s*\{|"spans"\s*:\s*\[')


# The regular expression is only searched for where one of its keys is in the head: a
# plain log's head has none, and a search for its opening quote stops at every key.
# Looked for as `"fields"`, then `"span"` or `"spans"` by one pattern: a substring test
# of each was a pass over the head each (0.1 ms a file; pod logs are many files).
_SPAN_NAMES = re.compile(rb'"spans?"')


def nesting_in(head: bytes) -> Unwrapper | None:
    named = b'"fields"' in head or _SPAN_NAMES.search(head) is not None
    found = _NESTING_KEY.search(head) if named else None
    if found is not None:
        start = head.rfind(b"\n", 0, found.start()) + 1
        end = head.find(b"\n", found.end())
        entries = json_objects(head[start : end if end >= 0 else len(head)]) or ()
        if any(has_nesting(entry) for entry in entries):
            return TracingJsonUnwrapper()
    # With flatten_event, a service's start-up lines have no nesting, and they can fill
    # the whole head (64 KiB read, 4 KiB followed): its first record is known by
    # tracing-subscriber's own keys instead, or every line after was "missing time".
    line = _first_json_line(head)
    first = json_objects(line) if line else None
    return TracingJsonUnwrapper() if first and flat_tracing(first[0]) else None


def _first_json_line(head: bytes) -> bytes:
    """The first line of `head` that opens a JSON object (b"" when none does)."""
    start = 0
    while start < len(head):
        end = head.find(b"\n", start)
        end = len(head) if end < 0 else end
        line = head[start:end]
        if line.lstrip()[:1] == b"{":
            return line
        start = end + 1
    return b""


def flat_tracing(entry: dict[str, Any]) -> bool:
    """tracing-subscriber's line outside any span: "timestamp", never "time"."""
    return "time" not in entry and all(key in entry for key in ("timestamp", "level", "target"))
