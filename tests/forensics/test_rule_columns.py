"""The requests frame as codes (`rules.columns`): lookups agree with pandas' own answers."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ridtrace.forensics.rules.columns import span_columns
from tests.forensics.helpers import requests_frame

_ID = st.one_of(st.none(), st.sampled_from(["a", "b", "c", "d"]))
_ROW = st.fixed_dictionaries({
    "trace_id": _ID, "span_id": _ID, "parent_span_id": _ID,
    "side": st.sampled_from(["frontend", "worker"]),
})


def _in_front(rows: list[dict[str, object]]) -> list[bool]:
    """Whether each row's frontend logs are read: its trace has a frontend span; for a
    row with no trace id, its parent is a frontend span, looked up in the one trace
    that has that span id (among its missing trace id's own when several do)."""
    fronts = [r for r in rows if r["side"] == "frontend"]
    front_traces = {r["trace_id"] for r in fronts if r["trace_id"] is not None}
    front_keys = {(r["trace_id"], r["span_id"]) for r in fronts if r["span_id"] is not None}
    traces_of: dict[object, set[object]] = {}
    for r in rows:
        if r["span_id"] is not None:
            traces_of.setdefault(r["span_id"], set()).add(r["trace_id"])
    out = []
    for r in rows:
        parent = r["parent_span_id"]
        if r["trace_id"] is not None:
            out.append(r["trace_id"] in front_traces)
        elif parent is None:
            out.append(False)
        else:
            named = traces_of.get(parent, set())
            trace = next(iter(named)) if len(named) == 1 else None
            out.append((trace, parent) in front_keys)
    return out


@given(st.lists(_ROW, min_size=1, max_size=12))
def test_trace_in_front_agrees_with_a_plain_lookup(rows: list[dict[str, object]]) -> None:
    # Span ids repeat across traces here on purpose: a worker whose parent id names a
    # frontend span of another trace must still be judged by its own trace. A missing
    # trace id matches no other: a span logged without one is judged by its parent.
    frame = requests_frame(*({**row, "start": 0.0, "end": 1.0} for row in rows))
    spans = span_columns(frame)
    asked = np.arange(len(frame))
    expected = np.array(_in_front(rows), dtype=bool)
    assert spans.trace_in_front(asked).tolist() == expected.tolist()
    # and for any subset, in any order
    subset = asked[::-2]
    assert spans.trace_in_front(subset).tolist() == expected[subset].tolist()


def test_trace_in_front_hashes_only_what_the_parent_links_do_not_answer() -> None:
    frame = requests_frame(
        {"trace_id": "t1", "span_id": "f1"},
        {"trace_id": "t1", "span_id": "w1", "parent_span_id": "f1", "side": "worker"},
        # parent id of a frontend span, but in a trace with no frontend span: an orphan
        {"trace_id": "t9", "span_id": "w2", "parent_span_id": "f1", "side": "worker"},
        # no parent logged, but its trace has a frontend span
        {"trace_id": "t1", "span_id": "w3", "side": "worker"},
    )
    spans = span_columns(frame)
    assert spans.trace_in_front(np.array([1, 2, 3])).tolist() == [True, False, True]
    assert spans.trace_in_front(np.zeros(0, dtype=np.int64)).tolist() == []
