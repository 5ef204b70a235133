"""The --since/--until window: whole requests that meet it, and the requests outside
it whose output theirs is compared with."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from ridtrace.forensics.rules.columns import SpanColumns, isin, lookup, span_columns
from ridtrace.forensics.rules.skew import shift_spans, span_offsets


class Window(NamedTuple):
    """What a window keeps of a read's requests."""

    requests: pd.DataFrame  # whole requests whose [start, end] meets [since, until)
    offsets: dict[str, int] | None  # the clock offsets they were compared on (None: no window)
    # `requests` and the whole requests outside the window that delivered or received an
    # output of theirs: the crossed-stream and lost-output rules' evidence (None: none).
    with_outputs: pd.DataFrame | None


def window_requests(
    requests: pd.DataFrame, since: pd.Timestamp | None, until: pd.Timestamp | None
) -> Window:
    """Requests whose [start, end] meets [since, until), whole, never clipped.

    Times are compared on the corrected clock (`rules.skew`, offsets estimated over all
    of `requests`), and a caller is kept with every span that worked for it: a worker
    file running behind had its spans fall before ``--since`` while their callers were
    in the window, and the crossed stream they proved went unreported. The window's
    requests are judged with these offsets (`analyze_requests`), not with offsets
    estimated from what the window left of the links.
    """
    if since is None and until is None:
        return Window(requests, None, None)
    spans = span_columns(requests)
    offsets = span_offsets(spans)
    shifted = shift_spans(spans, offsets)
    keep = np.ones(len(requests), dtype=bool)
    if since is not None:
        keep &= shifted.end >= _epoch_us(since)
    if until is not None:
        keep &= shifted.start < _epoch_us(until)
    keep = _whole(spans, keep)
    linked = _whole(spans, _output_linked(spans, keep)) & ~keep
    return Window(requests[keep], offsets, requests[keep | linked] if linked.any() else None)


def _whole(spans: SpanColumns, rows: np.ndarray) -> np.ndarray:
    """`rows` with every span of the requests they are part of: each caller with every
    span that worked for it."""
    caller = spans.caller()
    whole = lookup(spans.span_codes, caller[rows])[np.maximum(caller, 0)] & (caller >= 0)
    return np.asarray(rows | whole)


def _output_linked(spans: SpanColumns, kept: np.ndarray) -> np.ndarray:
    """Spans outside `kept` whose output a kept span's equals: the worker whose output a
    kept caller was delivered, the caller delivered a kept worker's output. Without
    them a caller in the window that received another's stream, the other before the
    window, matched no producer (its crossed stream unreported), and its own worker's
    output, delivered to that other, was reported lost ("no caller received")."""
    made = spans.fp_out >= 0
    delivered = spans.fp_out[kept & spans.front & made]
    produced = spans.fp_out[kept & spans.worker & made]
    return np.asarray(~kept & made & ((spans.worker & isin(spans.fp_out, delivered))
                                      | (spans.front & isin(spans.fp_out, produced))))


def _epoch_us(stamp: pd.Timestamp) -> int:
    return int(stamp.as_unit("ns").value) // 1000  # `value` is in nanoseconds, whatever the unit
