"""`ridtrace trace --format json|csv`: the same view, machine-readable.

The JSON shape is documented in docs/cli.md (``ridtrace trace``); keep the two in step.
"""

from __future__ import annotations

import csv
import io
from dataclasses import asdict
from typing import Any

from ridtrace.forensics.printable import csv_cell
from ridtrace.forensics.rfc3339 import rfc3339_us
from ridtrace.forensics.views.trace_model import RequestBlock, TraceView


def _iso(block: RequestBlock) -> str:
    return rfc3339_us(block.start)


def block_record(block: RequestBlock) -> dict[str, Any]:
    """One request as plain JSON-ready data."""
    producer = block.verdict.got_output_of
    return {
        "request_id": block.request_id,
        "x_request_id": block.x_request_id,
        "span_id": block.span_id,
        "trace_id": block.trace_id,
        "route": block.route,
        "status": block.status,
        "outcome": block.outcome,
        "start": _iso(block),
        "duration_ms": block.duration_ms,
        "verdict": block.verdict.label,
        "got_output_of": asdict(producer) if producer is not None else None,
        "findings": list(block.findings),
        "overlaps": list(block.overlaps),
        "spans": [asdict(bar) for bar in block.spans],
        "events": [asdict(ev) for ev in block.events],
    }


def trace_document(view: TraceView) -> dict[str, Any]:
    """``{"id", "matched", "shown", "more", "clock_offsets_ms", "workers", "requests"}``."""
    return {
        "id": view.ident,
        "matched": view.matched,
        "shown": len(view.blocks),
        "more": view.more,
        "clock_offsets_ms": dict(view.offsets_ms),
        "workers": dict(view.sides),
        "requests": [block_record(block) for block in view.blocks],
    }


CSV_COLUMNS = (
    "request_span_id", "request_id", "x_request_id", "verdict", "got_output_of_span_id",
    "ms", "side", "span_id", "event", "outcome", "level", "file", "line",
)


def trace_csv(view: TraceView) -> str:
    """One row per event, each carrying its request's ids and verdict."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for block in view.blocks:
        producer = block.verdict.got_output_of
        # Every text cell is the logs' text, and the ids and messages the clients'.
        head = [csv_cell(t) for t in (
            block.span_id, block.request_id or "", block.x_request_id or "",
            block.verdict.label, (producer.span_id or "") if producer else "",
        )]
        for ev in block.events:
            writer.writerow([*head, ev.ms, *map(csv_cell, (
                ev.side, ev.span_id, ev.event, ev.outcome or "", ev.level or "", ev.file,
            )), ev.line])
    return buf.getvalue()
