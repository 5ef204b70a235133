"""Findings held column-wise: what every rule returns and the report sorts and writes.

A finding names a request row (its ids are taken from there), a time, a detail and its
evidence, the ``{"file", "line"}`` items an operator opens to check the claim. Rules
build whole columns at once; the only per-finding Python is the detail text and the
small evidence lists. `findings_frame` turns the columns into the public DataFrame
(`FINDING_COLUMNS`).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ridtrace.contract import FINDING_COLUMNS, SEVERITY
from ridtrace.forensics.rules import MAX_CALLER_DEPTH
from ridtrace.forensics.rules.columns import LinesAt, SpanColumns, first_rows

Evidence = list[dict[str, Any]]


@contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection inside the block (restored after, also on error).

    Findings are tens of thousands of small dicts, lists and strings, none in a cycle:
    each collection their allocations trigger only walks the heap again. On 16,093
    findings that was ~90 collections, ~0.1 CPU-s in the rules and ~0.1 in the JSON.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass
class FindingColumns:
    """Findings as equal-length columns; ``kind`` holds one kind per row."""

    kind: list[str] = field(default_factory=list)
    request_id: list[str | None] = field(default_factory=list)
    x_request_id: list[str | None] = field(default_factory=list)
    span_id: list[str | None] = field(default_factory=list)
    time_us: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    detail: list[str] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.kind)

    def take(self, order: np.ndarray) -> FindingColumns:
        """The rows at `order`, in that order."""
        idx = order.tolist()
        return FindingColumns(
            kind=[self.kind[i] for i in idx],
            request_id=[self.request_id[i] for i in idx],
            x_request_id=[self.x_request_id[i] for i in idx],
            span_id=[self.span_id[i] for i in idx],
            time_us=self.time_us[order],
            detail=[self.detail[i] for i in idx],
            evidence=[self.evidence[i] for i in idx],
        )

    def head(self, n: int) -> FindingColumns:
        """The first `n` rows."""
        return self.take(np.arange(min(n, len(self))))

    def iso_times(self) -> list[str | None]:
        """Times as RFC 3339 UTC text with microseconds, None where unknown."""
        text = np.datetime_as_string(self.time_us.view("datetime64[us]"), unit="us")
        return [None if t == "NaT" else t + "Z" for t in text.tolist()]


def finding_dicts(found: FindingColumns) -> list[dict[str, Any]]:
    """Findings as JSON-ready dicts, keys in `FINDING_COLUMNS` order."""
    severity = {kind: SEVERITY[kind] for kind in set(found.kind)}
    return [
        {"kind": kind, "severity": severity[kind], "request_id": rid, "x_request_id": xrid,
         "span_id": span, "time": time, "detail": detail, "evidence": proof}
        for kind, rid, xrid, span, time, detail, proof in zip(
            found.kind, found.request_id, found.x_request_id, found.span_id, found.iso_times(),
            found.detail, found.evidence, strict=True,
        )
    ]


def of_rows(
    kind: str, spans: SpanColumns, rows: np.ndarray, time_us: np.ndarray,
    detail: list[str], evidence: list[Evidence],
) -> FindingColumns:
    """Findings of one kind about request rows `rows` (their ids are the finding's)."""
    return FindingColumns(
        kind=[kind] * len(rows),
        request_id=request_texts(spans, "request_id", rows),
        x_request_id=request_texts(spans, "x_request_id", rows),
        span_id=spans.texts("span_id", rows),
        time_us=np.asarray(time_us, dtype=np.int64),
        detail=detail,
        evidence=[_each_line_once(items) for items in evidence],
    )


def _each_line_once(items: Evidence) -> Evidence:
    """A finding's lines, each once, in their order. Records that share a line (an
    OpenTelemetry Collector's batch, records packed several to a line) are cited at
    that line: two callers there cited it twice."""
    if len(items) < 2:
        return items
    seen: set[tuple[str, int]] = set()
    once = []
    for item in items:
        key = (item["file"], item["line"])
        if key not in seen:
            seen.add(key)
            once.append(item)
    return once


def request_texts(spans: SpanColumns, column: str, rows: np.ndarray) -> list[str | None]:
    """`column` at `rows`; where a row logged none, that of the span it is nested in.

    Dynamo logs a request's ids on two spans: the client's ``x_request_id`` on its
    ``http-request`` span, the internal ``request_id`` on the ``generate`` span inside
    it. A finding about the inner span is about that request, and names both ids.
    """
    own = spans.texts(column, rows)
    missing = np.flatnonzero([value is None for value in own])
    if not len(missing):
        return own
    row_of = first_rows(spans.span, spans.span_codes, np.arange(len(spans)))
    at = rows[missing]
    for _ in range(MAX_CALLER_DEPTH):
        parent = spans.parent[at]
        up = np.where(parent >= 0, row_of[np.maximum(parent, 0)], -1)
        known = up >= 0
        missing, at = missing[known], up[known]
        if not len(at):
            break
        still = []
        for i, value in enumerate(spans.texts(column, at)):
            if value is None:
                still.append(i)
            else:
                own[missing[i]] = value
        missing, at = missing[still], at[still]
    return own


def concat(parts: Sequence[FindingColumns]) -> FindingColumns:
    """Row-wise concatenation, in the order given."""
    out = FindingColumns()
    for part in parts:
        out.kind += part.kind
        out.request_id += part.request_id
        out.x_request_id += part.x_request_id
        out.span_id += part.span_id
        out.detail += part.detail
        out.evidence += part.evidence
    out.time_us = np.concatenate([out.time_us, *(p.time_us for p in parts)])
    return out


def evidence(first: LinesAt, second: LinesAt | None = None) -> list[Evidence]:
    """Per row, the ``{"file", "line"}`` items of its present lines (of one or two
    columns, taken at the finding's rows), a line given twice only once."""
    if second is None:
        return [[{"file": f, "line": x}] if x >= 0 else []
                for f, x in zip(first.files.tolist(), first.lines.tolist(), strict=True)]
    return [
        ([{"file": f, "line": x}] if x >= 0 else [])
        + ([{"file": g, "line": y}] if y >= 0 and (g, y) != (f, x) else [])
        for f, x, g, y in zip(first.files.tolist(), first.lines.tolist(),
                              second.files.tolist(), second.lines.tolist(), strict=True)
    ]


def findings_frame(findings: FindingColumns) -> pd.DataFrame:
    """The public findings DataFrame: `FINDING_COLUMNS`, times as UTC timestamps."""
    n = len(findings)
    times = pd.DatetimeIndex(findings.time_us.view("datetime64[us]")).tz_localize("UTC")
    data: dict[str, Any] = {
        "kind": _objects(findings.kind),
        "severity": _objects([SEVERITY[k] for k in findings.kind]),
        "request_id": _objects(findings.request_id),
        "x_request_id": _objects(findings.x_request_id),
        "span_id": _objects(findings.span_id),
        "time": times,
        "detail": _objects(findings.detail),
        "evidence": _objects(findings.evidence),
    }
    return pd.DataFrame(data, columns=list(FINDING_COLUMNS),
                                           index=pd.RangeIndex(n))


def _objects(values: Sequence[Any]) -> pd.Series:
    # Plain objects, None for missing: pandas would otherwise infer a str dtype with NaN.
    return pd.Series(values, dtype=object)
