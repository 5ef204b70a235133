"""Span keys for `ridtrace trace` that keep apart one span id logged in several traces.

Requests are keyed by (trace_id, span_id). The trace view groups, links and numbers
spans by their span id alone: two callers that logged one span id in different traces
were shown as one request with both one's spans and the other's. Where a span id is in
several traces its spans (and the spans naming it as parent, in the same trace) take
the key ``SPAN (trace TRACE)``, which the text shows; the JSON and CSV give the logged
span id back (`logged`), next to the trace id. A parent id that is only another trace's
span id is keyed so too, and names no span read: its worker's caller is not in the logs.
"""

from __future__ import annotations

from typing import Any

import pandas as pd


def _key(span: object, trace: Any) -> str:
    return f"{span} (no trace id)" if pd.isna(trace) else f"{span} (trace {trace})"


def _rekeyed(column: pd.Series, traces: pd.Series, shared: set[object]) -> pd.Series:
    values = column.astype(object)
    hit = values.isin(shared).to_numpy()
    if not hit.any():
        return values
    keyed = [_key(s, t) for s, t in zip(values[hit], traces.astype(object)[hit], strict=True)]
    return values.mask(hit, pd.Series(keyed, index=values.index[hit], dtype=object))


def _parents_trace(parent: pd.Series, traces: pd.Series, pairs: pd.DataFrame,
                   traces_per_span: pd.Series) -> pd.Series:
    """The trace each span's parent is looked up in: its own, but for a span logged
    without a trace id (work sent without trace context), which names its parent by
    span id alone: that span id's trace when only one trace has it (as the rules link
    it, `rules.columns._parents_trace`)."""
    sole = traces_per_span.index[(traces_per_span == 1).to_numpy()]
    asked = traces.isna() & parent.isin(sole)
    if not asked.any():
        return traces
    trace_of = pairs.drop_duplicates("span").set_index("span")["trace"]
    return traces.mask(asked, parent[asked].map(trace_of))


def apart_by_trace(
    requests: pd.DataFrame, events: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, str]]:
    """`requests` and `events` with span ids keyed apart where a span id is in several
    traces, and each such key's logged span id (empty when no span id repeats)."""
    pairs = pd.DataFrame({"span": requests["span_id"].astype(object),
                          "trace": requests["trace_id"].astype(object)}).dropna(subset=["span"])
    traces_per_span = pairs.groupby("span")["trace"].nunique(dropna=False)
    shared = set(traces_per_span.index[(traces_per_span > 1).to_numpy()])
    # A parent id that is a span id of another trace only: that span is not the parent.
    parent = requests["parent_span_id"].astype(object)
    traces = requests["trace_id"].astype(object)
    parent_traces = _parents_trace(parent, traces, pairs, traces_per_span)
    known = pd.MultiIndex.from_arrays([pairs["span"], pairs["trace"]])
    elsewhere = (parent.isin(pairs["span"]).to_numpy()
                 & ~pd.MultiIndex.from_arrays([parent, parent_traces]).isin(known))
    if not shared and not elsewhere.any():
        return requests, events, {}
    parents = _rekeyed(parent, parent_traces, shared)
    parents = parents.mask(elsewhere, pd.Series(
        [_key(p, t) for p, t in zip(parent[elsewhere], traces[elsewhere], strict=True)],
        index=parent.index[elsewhere], dtype=object))
    requests = requests.assign(
        span_id=_rekeyed(requests["span_id"], traces, shared), parent_span_id=parents,
    )
    events = events.assign(span_id=_rekeyed(events["span_id"], events["trace_id"], shared))
    logged = {_key(s, t): str(s) for s, t in zip(pairs["span"], pairs["trace"], strict=True)
              if s in shared}
    logged.update((_key(p, t), str(p)) for p, t in zip(parent[elsewhere], traces[elsewhere],
                                                       strict=True))
    return requests, events, logged
