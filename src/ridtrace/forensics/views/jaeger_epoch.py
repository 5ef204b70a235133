"""Spans logged before 1970 in `export jaeger`: at 1970, with a warning saying so.

Jaeger's model types a span's `startTime` and a log's `timestamp` as unsigned
microseconds since 1970 (`uint64`). A line dated before it, such as Go's zero time
(year 1, an unset clock), was written as a negative number, which Jaeger's model cannot
hold: the file was refused or the span wrapped to a date far in the future. The span is
kept, as its ids, tags and children are still the request's; its times are set to 1970
and a warning on it says they were logged earlier, as other times Jaeger cannot show
are flagged (`jaeger.NO_START`). To 1 µs after it, not 0: Jaeger UI's upload drops every
span whose ``startTime`` is 0 (``spans.filter(span => Boolean(span.startTime))``), and
with it the warning: such a trace uploaded empty.
"""

from __future__ import annotations

from typing import Any, Final

BEFORE_1970: Final = ("logged before 1970 (such as Go's zero time, year 1: a clock not set), "
                      "which Jaeger's unsigned times cannot hold: the span's times "
                      "before 1970 are shown as 1970-01-01 (1 µs after midnight); its duration "
                      "is as logged")


def from_1970(span: dict[str, Any]) -> dict[str, Any]:
    """`span` with its startTime and log timestamps before 1970 set to 1970, and a
    warning saying so; `span` unchanged when none is."""
    logs = span["logs"]
    if span["startTime"] >= _FIRST_SHOWN and all(log["timestamp"] >= _FIRST_SHOWN
                                                  for log in logs):
        return span
    return {
        **span,
        "startTime": max(span["startTime"], _FIRST_SHOWN),
        "logs": [{**log, "timestamp": max(log["timestamp"], _FIRST_SHOWN)} for log in logs],
        "warnings": [*(span["warnings"] or []), BEFORE_1970],
    }


# The first time a span is written at: 1970-01-01T00:00:00.000001Z (see above).
_FIRST_SHOWN = 1
