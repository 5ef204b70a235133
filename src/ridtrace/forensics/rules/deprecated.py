"""The info finding for deprecated id headers: one per request that sent one (a frontend
request, or a worker's work called directly, which is a request of its own).

A pure function like the other rules: ``find_deprecated_header`` on `SpanColumns`,
``deprecated_header`` on a requests DataFrame.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.compute as pc

from ridtrace.forensics.rules.columns import SpanColumns, isin, span_columns
from ridtrace.forensics.rules.findings import (
    FindingColumns,
    evidence,
    findings_frame,
    of_rows,
)


def find_deprecated_header(spans: SpanColumns) -> FindingColumns:
    """`deprecated_header` on converted columns."""
    header = spans.text["deprecated"]
    # A worker's span names the headers only when called directly (a frontend never
    # sends them on): with no caller in the logs (none, or a `traceparent`'s span that
    # is no logged one), it is the request.
    caller = spans.caller()
    own_caller = spans.worker & ((caller == spans.span) | ~isin(caller, spans.span))
    rows = one_per_request(
        spans, caller,
        np.flatnonzero(pc.is_valid(header).to_numpy(zero_copy_only=False)
                       & (spans.front | own_caller)),
    )
    detail = [f"sent deprecated header {h}" for h in spans.texts("deprecated", rows)]
    proof = evidence(spans.lines_at("deprecated_line", rows))
    return of_rows("deprecated_header", spans, rows, spans.start[rows], detail, proof)


def one_per_request(spans: SpanColumns, caller: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """`rows`, one per request: a frontend span nested in another (Dynamo's ``generate``
    in its ``http-request``) is that request's, and the request's own span is kept where
    both name the headers (a WARN on each was counted as two requests that sent them)."""
    request = np.where(spans.front[rows], caller[rows], spans.span[rows])
    request = np.where(request >= 0, request, -1 - rows)  # a span with no code: its own
    nested = request != spans.span[rows]
    order = np.lexsort((nested, request))
    kept = np.ones(len(order), dtype=bool)
    kept[1:] = request[order][1:] != request[order][:-1]
    return np.sort(rows[order][kept])


def deprecated_header(requests: pd.DataFrame) -> pd.DataFrame:
    """One info finding per request that sent a deprecated id header."""
    return findings_frame(find_deprecated_header(span_columns(requests)))

