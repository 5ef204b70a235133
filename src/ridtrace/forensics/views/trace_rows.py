"""The rows `ridtrace trace` shows, as `trace_model.build_trace` fills them: per caller a
block of its facts, its spans on one clock, and its log lines."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ridtrace.contract import FRONTEND
from ridtrace.forensics.views.verdicts import Verdict, text

# Error findings a block can be part of, in the order that makes it relevant.
CROSSED_STREAM = "crossed_stream"
DUPLICATE_IN_FLIGHT = "duplicate_in_flight"
UNLINKED = "unlinked"
ERROR_KINDS = (CROSSED_STREAM, DUPLICATE_IN_FLIGHT, UNLINKED)


def logged_id(column: str, root: Any, spans: list[Any]) -> str | None:
    """The caller's `column` (``request_id``, ``x_request_id``); where its own span logged
    none, the first its frontend spans logged. Dynamo writes the client's id on its
    ``http-request`` span and the internal one on the ``generate`` span inside it."""
    own = text(getattr(root, column))
    if own is not None:
        return own
    logged = (text(getattr(s, column)) for s in spans if s.side == FRONTEND)
    return next((value for value in logged if value is not None), None)


@dataclass(frozen=True)
class SpanBar:
    """One span of a request on the block's clock (ms since the caller's start)."""

    side: str
    span_id: str
    start_ms: float
    end_ms: float
    outcome: str | None
    file: str
    # A line of it closes it: without one (a worker killed mid-stream, a request still
    # in flight), the bar ends at its last line, not where the span ended.
    closed: bool = True
    # A line of it opens it: without one (its request.start rotated away), the bar
    # starts at its first line, or where its answer says it began.
    opened: bool = True
    # Its name as its service logged it (Dynamo's `http-request`, `generate`,
    # `handle_payload`); None where the logs name none, as ridtrace's own lines.
    name: str | None = None


@dataclass(frozen=True)
class EventRow:
    """One log line of a request: when, where, what."""

    ms: float
    side: str
    span_id: str
    event: str
    outcome: str | None
    level: str | None
    file: str
    line: int
    # What the line says beyond its event (`trace_events.line_detail`): a dispatch
    # line's worker and reason, a deprecated header's name, a logged error.
    detail: str | None = None


@dataclass
class RequestBlock:
    """One caller with everything it did, and what the fingerprints say it received."""

    span_id: str
    request_id: str | None
    x_request_id: str | None
    trace_id: str | None
    route: str | None
    status: str | None
    outcome: str | None
    start: pd.Timestamp
    duration_ms: float | None  # None: its start is not in the logs, nor stated
    verdict: Verdict
    findings: tuple[str, ...] = ()
    overlaps: tuple[str, ...] = ()  # other callers that held this request_id at once
    deprecated_headers: tuple[str, ...] = ()  # the deprecated id headers it sent
    # Whether a line of the caller says where it began (`trace_starts`).
    start_logged: bool = True
    spans: list[SpanBar] = field(default_factory=list)
    events: list[EventRow] = field(default_factory=list)
    # Lines of it not among `events` (`trace_events.MAX_LINES`): none a lifecycle line,
    # all from where `events` holds `omitted_at`.
    events_omitted: int = 0
    omitted_at: int = 0


@dataclass
class TraceView:
    """The blocks to show (most relevant first) and what was left out."""

    ident: str
    blocks: list[RequestBlock]
    matched: int
    offsets_ms: dict[str, float]
    sides: dict[str, str]  # worker-N -> the file (and service) it names
    # Span keys of a span id logged in several traces -> that span id (`trace_keys`).
    logged_span_ids: dict[str, str] = field(default_factory=dict)
    # Span ids linked in one spelling -> the spelling their span logged (`trace_spellings`).
    spelt_span_ids: dict[str, str] = field(default_factory=dict)

    @property
    def more(self) -> int:
        """Matching requests not shown (beyond --limit)."""
        return self.matched - len(self.blocks)
