"""How a live finding is written: its fields, its time, the spans it names and cites.

`live.rules` and `live.verdicts` decide when a finding is certain; this module writes it
down.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ridtrace.contract import SEVERITY, WORKER
from ridtrace.forensics.live.spans import Span
from ridtrace.forensics.rules import MAX_CALLER_DEPTH

Finding = dict[str, Any]


def iso_us(us: int) -> str:
    """Epoch µs as RFC 3339 UTC, as the analyze report writes times."""
    # numpy, not datetime: DuckDB reads year 0 and years past 9999, which a datetime
    # cannot hold; numpy writes every year as the batch report's rfc3339_us does.
    return f"{np.datetime64(us, 'us')}Z"


def _finding(kind: str, span: Span, time: int, detail: str,
             evidence: list[tuple[str, int]], request_id: str | None = None) -> Finding:
    # In the order cited, each once: a dict, as a list's `in` made a duplicate over N
    # callers (2N lines) cost N² (151 CPU-s for one id held by 100k callers).
    seen = dict.fromkeys(item for item in evidence if item[1] >= 0)
    return {
        "kind": kind, "severity": SEVERITY[kind],
        "request_id": request_id if request_id is not None else _logged(span, "request_id"),
        "x_request_id": _logged(span, "x_request_id"), "span_id": span.span_id,
        "time": iso_us(time),
        "detail": detail, "evidence": [{"file": f, "line": n} for f, n in seen],
    }


def _logged(span: Span, field: str) -> str | None:
    """`span`'s id `field`, or where it logged none, that of the span it is nested in, as
    the batch report's (`rules.findings.request_texts`): Dynamo logs the client's id on
    ``http-request``, the internal one on the ``generate`` span inside it."""
    at: Span | None = span
    for _ in range(MAX_CALLER_DEPTH):
        if at is None:
            break
        value: str | None = getattr(at, field)
        if value is not None:
            return value
        at = at.parent_span
    return None


def _named(span: Span, caught_up: int) -> str:
    """The span a finding names for `span`'s caller, as the batch report does: the
    caller, or the worker span that stands for it when the caller's logs are absent
    (known by its worker's span, which `trace` finds) — certain once every file is read
    past the worker's start (`caught_up`) without the caller, who started before it."""
    if span.side == WORKER and span.parent_span is None and caught_up >= span.start:
        return span.span_id
    return span.caller()


def _cited(members: list[Span]) -> list[Span]:
    """The spans a duplicate is judged by and cites, as the batch rule's rows: each
    caller's own span (a worker span stands for its caller only when the caller's logs
    are absent), by start, longest first among those that start together.

    Citing every member added each worker span's start and end to its caller's two lines,
    so the live finding cited four lines a caller where `analyze` afterwards cited two.
    """
    own: dict[int, Span] = {}
    for m in members:
        span = m.holder()
        own.setdefault(id(span), span)
    return sorted(own.values(), key=lambda m: (m.start, -m.last))


def _one_caller(members: list[Span]) -> bool:
    first = members[0].caller_key()
    return all(m.caller_key() == first for m in members[1:])
