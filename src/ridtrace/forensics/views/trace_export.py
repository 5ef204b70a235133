"""`ridtrace trace --format json|csv`: the same view, machine-readable.

The JSON shape is documented in docs/cli.md (``ridtrace trace``); keep the two in step.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from ridtrace.contract import TRACE_CSV_COLUMNS
from ridtrace.forensics.printable import csv_cell
from ridtrace.forensics.rfc3339 import rfc3339_us
from ridtrace.forensics.views.trace_rows import RequestBlock, TraceView


def _iso(block: RequestBlock) -> str:
    return rfc3339_us(block.start)


def block_record(block: RequestBlock, logged: dict[str, str] | None = None) -> dict[str, Any]:
    """One request as plain JSON-ready data (`logged`: `TraceView.logged_span_ids`)."""
    producer = block.verdict.got_output_of
    ids = logged or {}

    def span(key: str | None) -> str | None:
        return ids.get(key, key) if key is not None else None

    def with_span(record: dict[str, Any]) -> dict[str, Any]:
        return {**record, "span_id": span(record["span_id"])}

    got = asdict(producer) if producer is not None else None
    if got is not None:
        got.update(span_id=span(got["span_id"]), worker_span_id=span(got["worker_span_id"]))
    return {
        "request_id": block.request_id,
        "x_request_id": block.x_request_id,
        "span_id": span(block.span_id),
        "trace_id": block.trace_id,
        "route": block.route,
        "status": block.status,
        "outcome": block.outcome,
        "start": _iso(block),
        "duration_ms": block.duration_ms,
        "verdict": block.verdict.label,
        "got_output_of": got,
        "findings": list(block.findings),
        "overlaps": [span(key) for key in block.overlaps],
        "deprecated_headers": list(block.deprecated_headers),
        # The documented span keys: `closed` and `opened` only tell the waterfall to say
        # "no end" or "no start".
        "spans": [with_span({k: v for k, v in asdict(bar).items()
                             if k not in ("closed", "opened")})
                  for bar in block.spans],
        "events": [with_span(asdict(ev)) for ev in block.events],
        # Only when lines were left out (`--max-lines`): the document's keys otherwise
        # as they were.
        **({"events_omitted": block.events_omitted} if block.events_omitted else {}),
    }


def trace_document(view: TraceView, incomplete_reasons: Sequence[str] = ()) -> dict[str, Any]:
    """``{"id", "matched", "shown", "more", "incomplete", "incomplete_reasons",
    "clock_offsets_ms", "workers", "requests"}``; `incomplete_reasons` as `analyze`'s
    summary has them: why lines of these requests may be missing."""
    return {
        "id": view.ident,
        "matched": view.matched,
        "shown": len(view.blocks),
        "more": view.more,
        "incomplete": bool(incomplete_reasons),
        "incomplete_reasons": list(incomplete_reasons),
        "clock_offsets_ms": dict(view.offsets_ms),
        "workers": dict(view.sides),
        "requests": [block_record(block, view.logged_span_ids) for block in view.blocks],
    }


CSV_COLUMNS = TRACE_CSV_COLUMNS


def trace_csv(view: TraceView) -> str:
    """One row per event, each carrying its request's ids and verdict."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    logged = view.logged_span_ids
    for block in view.blocks:
        producer = block.verdict.got_output_of
        got = (producer.span_id or "") if producer else ""
        # Every text cell is the logs' text, and the ids and messages the clients'.
        head = [csv_cell(t) for t in (
            logged.get(block.span_id, block.span_id), block.request_id or "",
            block.x_request_id or "", block.verdict.label, logged.get(got, got),
        )]
        for ev in block.events:
            writer.writerow([*head, ev.ms, *map(csv_cell, (
                ev.side, logged.get(ev.span_id, ev.span_id), ev.event, ev.outcome or "",
                ev.level or "", ev.file,
            )), ev.line, csv_cell(ev.detail or "")])
    return buf.getvalue()
