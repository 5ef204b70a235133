"""`export jaeger`'s per-span facts, worked out for all spans at once, against the same
questions asked span by span (as the export asked them before), on random lines.

`SpanLogs` answers when a span answered, whether it logged its start (and the start its
answer states), whether a worker's ended, and its lines as Jaeger logs; `in_jaeger_form`
picks the ids already in Jaeger's form; `_rows` gives the rows itertuples gives.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ridtrace.contract import (
    DURATION_MS,
    REQUEST_END,
    REQUEST_START,
    RESPONSE_SENT,
    SPAN_CLOSED,
    WORKER_END,
    WORKER_START,
)
from ridtrace.forensics.reading.sql import CLOSING_EVENTS
from ridtrace.forensics.records.requests import epoch_us
from ridtrace.forensics.views import jaeger_ids
from ridtrace.forensics.views.jaeger import _rows
from ridtrace.forensics.views.jaeger_logs import SpanLogs, jaeger_form

EVENTS = [REQUEST_START, REQUEST_END, RESPONSE_SENT, SPAN_CLOSED, WORKER_START, WORKER_END,
          "dispatch.attempt", "stream.chunk"]
# Two spellings of one span ("A1" and "00a1" are one id to Jaeger), and a trace spelt two ways.
TRACES = ["0" * 16 + "ab" * 8, "ab" * 8, "CD" * 16, "trace two"]
SPANS = ["a1", "00A1", "b2" * 8, "span x"]
BASE_US = 1_800_000_000_000_000


def _events(lines: list[tuple[int, int, int, int, int | None]]) -> pd.DataFrame:
    """Events frame of (trace, span, event, µs after BASE_US, stated ms) picks."""
    return pd.DataFrame({
        "time": pd.to_datetime([BASE_US + us for _, _, _, us, _ in lines], unit="us", utc=True),
        "trace_id": pd.Series([TRACES[t] for t, _, _, _, _ in lines], dtype="string[pyarrow]"),
        "span_id": pd.Series([SPANS[s] for _, s, _, _, _ in lines], dtype="string[pyarrow]"),
        "event": pd.Series([EVENTS[e] for _, _, e, _, _ in lines], dtype="string[pyarrow]"),
        "message": pd.Series([f"m{i}" if i % 3 else None for i in range(len(lines))],
                             dtype="string[pyarrow]"),
        DURATION_MS: pd.Series([None if ms is None else str(ms) for *_, ms in lines],
                               dtype="string[pyarrow]"),
        "file": pd.Series(["w.jsonl" if t % 2 else "f.jsonl" for t, *_ in lines],
                          dtype="category"),
    })


class _OneSpanAtATime:
    """The questions as the export asked them before, span by span (the reference)."""

    def __init__(self, events: pd.DataFrame, offsets: dict[str, int]) -> None:
        us = epoch_us(events["time"]) + events["file"].astype(str).map(offsets).fillna(0).to_numpy(dtype=np.int64)
        self.us, self.event = us, events["event"].astype(object).to_numpy()
        self.message = events["message"].astype(object).to_numpy()
        self.stated = pd.to_numeric(events[DURATION_MS].astype(object), errors="coerce").to_numpy()
        traces = [jaeger_ids.trace_id(t) for t in events["trace_id"]]
        spans = [jaeger_ids.span_id(s) for s in events["span_id"]]
        self.rows: dict[tuple[str, str], list[int]] = {}
        for i, key in enumerate(zip(traces, spans, strict=True)):
            self.rows.setdefault(key, []).append(i)

    def answered_at(self, key: tuple[str, str]) -> int | None:
        at = self.rows.get(key, [])
        answers = [i for i in at if self.event[i] in (REQUEST_END, RESPONSE_SENT)]
        answers = answers or [i for i in at if self.event[i] == SPAN_CLOSED]
        return max(int(self.us[i]) for i in answers) if answers else None

    def stated_start(self, key: tuple[str, str], start: int) -> tuple[bool, int | None]:
        at = self.rows.get(key)
        if not at or any(self.event[i] == REQUEST_START for i in at) or start < min(
                self.us[i] for i in at):
            return False, None
        answers = [i for i in at if self.event[i] in (REQUEST_END, RESPONSE_SENT)]
        if not answers:
            return True, None
        last = max(answers, key=lambda i: (self.us[i], -i))  # the first line of the latest
        stated = float(self.stated[last])
        if not 0 <= stated <= 7 * 24 * 3600 * 1000.0:
            return True, None
        return True, min(start, int(self.us[last]) - round(stated * 1000))

    def began_work_unended(self, key: tuple[str, str]) -> bool:
        events = {self.event[i] for i in self.rows.get(key, [])}
        return WORKER_START in events and not events & set(CLOSING_EVENTS)

    def logs(self, key: tuple[str, str]) -> list[dict[str, Any]]:
        at = sorted(self.rows.get(key, []), key=lambda i: (self.us[i], i))
        out = []
        for i in at:
            fields = [{"key": "event", "type": "string", "value": self.event[i]}]
            if self.message[i] is not None and self.message[i] is not pd.NA:
                fields.append({"key": "message", "type": "string", "value": self.message[i]})
            out.append({"timestamp": int(self.us[i]), "fields": fields})
        return out


_LINE = st.tuples(st.integers(0, len(TRACES) - 1), st.integers(0, len(SPANS) - 1),
                  st.integers(0, len(EVENTS) - 1), st.integers(0, 50),
                  st.one_of(st.none(), st.integers(-5, 60)))


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(_LINE, min_size=1, max_size=40), skew=st.integers(-20, 20),
       start=st.integers(-10, 60))
def test_the_facts_of_every_span_are_those_asked_span_by_span(
    lines: list[tuple[int, int, int, int, int | None]], skew: int, start: int,
) -> None:
    events = _events(lines)
    offsets = {"w.jsonl": skew}
    logs, reference = SpanLogs(events, offsets), _OneSpanAtATime(events, offsets)
    keys = {(jaeger_ids.trace_id(t), jaeger_ids.span_id(s)) for t in TRACES for s in SPANS}
    for key in keys:
        assert logs.answered_at(*key) == reference.answered_at(key), key
        assert logs.stated_start(*key, BASE_US + start) == reference.stated_start(
            key, BASE_US + start), key
        assert logs.began_work_unended(*key) == reference.began_work_unended(key), key
        assert logs.get(*key) == reference.logs(key), key


def test_a_span_with_no_lines_has_no_facts() -> None:
    logs = SpanLogs(None, {})
    assert logs.answered_at("ab" * 8, "a1") is None
    assert logs.stated_start("ab" * 8, "a1", 5) == (False, None)
    assert not logs.began_work_unended("ab" * 8, "a1")
    assert logs.get("ab" * 8, "a1") == []


_ID = st.text(alphabet="0123456789abcdefABCDEFx ", max_size=40)


@settings(max_examples=300, deadline=None)
@given(ids=st.lists(_ID, min_size=1, max_size=20))
def test_ids_in_jaeger_form_are_those_its_conversion_keeps(ids: list[str]) -> None:
    text = pd.Series(ids, dtype="str")
    for trace, convert in ((True, jaeger_ids.trace_id), (False, jaeger_ids.span_id)):
        assert jaeger_ids.in_jaeger_form(text, trace=trace).tolist() == [
            convert(i) == i for i in ids]
        assert jaeger_form(text, trace=trace).tolist() == [convert(i) for i in ids]


@pytest.mark.parametrize("text_dtype", ["string[pyarrow]", "str", pd.ArrowDtype(
    __import__("pyarrow").string())])
def test_rows_are_the_rows_itertuples_gives(text_dtype: Any) -> None:
    frame = pd.DataFrame({
        "trace_id": pd.Series(["a", None, "c"] * 3000, dtype=text_dtype),
        "route": pd.Series(["/x", None, "/y"] * 3000, dtype="category"),
        "line": pd.Series([1, None, 3] * 3000, dtype="Int64"),
        "start": pd.to_datetime([0, 1, 2] * 3000, unit="s", utc=True),
        "not an identifier": [1.5, float("nan"), 2.5] * 3000,
    })
    expected = list(frame.itertuples(index=False))
    got = list(_rows(frame))
    assert [r._fields for r in got[:1]] == [expected[0]._fields]
    assert len(got) == len(expected)
    for want, have in zip(expected, got, strict=True):
        for a, b in zip(want, have, strict=True):
            assert type(a) is type(b)
            assert a is b or a == b or (a != a and b != b)  # NaN is NaN
