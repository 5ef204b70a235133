"""The report over a requests frame (`rules.report`): order, dtypes, JSON text, requests."""

from __future__ import annotations

import gc
import json

import pandas as pd
import pyarrow as pa
import pytest

from ridtrace.forensics.reading.stats import FileNote, ReadStats
from ridtrace.forensics.rules.findings import paused_gc
from ridtrace.forensics.rules.overlap import client_id_reuse
from ridtrace.forensics.rules.report import (
    analyze_requests,
    report_csv,
    report_json,
    report_json_text,
)
from tests.forensics.helpers import at, requests_frame

_TEXT_COLUMNS = ("trace_id", "span_id", "parent_span_id", "request_id", "x_request_id",
                 "fp_in", "fp_out", "deprecated", "unlinked", "foreign", "error", "client")


def _stats() -> ReadStats:
    return ReadStats(files=2, lines=100)


def _incident() -> pd.DataFrame:
    """Every kind of finding, a worker file whose clock is 0.4 s behind, ids missing here and there."""
    return requests_frame(
        # two callers held request_id 1 at once; B was delivered A's output
        {"span_id": "A", "request_id": "1", "fp_in": "inA", "fp_out": None, "outcome": "error",
         "unlinked": "Unlinked request; x", "unlinked_line": 5, "start": 1.0, "end": 3.0},
        {"span_id": "B", "request_id": "1", "fp_in": "inB", "fp_out": "outA", "outcome": "ok",
         "x_request_id": "c1", "start": 1.5, "end": 3.0},
        {"span_id": "wA", "parent_span_id": "A", "trace_id": "t0", "side": "worker",
         "file": "w.jsonl", "fp_in": "inA", "fp_out": "outA", "outcome": "ok", "request_id": "1",
         "start": 0.7, "end": 2.5},
        {"span_id": "wB", "parent_span_id": "B", "trace_id": "t1", "side": "worker",
         "file": "w.jsonl", "fp_in": "inB", "fp_out": "outB", "outcome": "ok", "request_id": "1",
         "start": 1.2, "end": 2.5},
        # a client id reused by two overlapping requests, one with a deprecated header
        {"span_id": "C", "request_id": "2", "x_request_id": "c1", "outcome": "ok",
         "deprecated": "request-id", "deprecated_line": 30, "start": 2.0, "end": 4.0},
        {"span_id": "D", "request_id": None, "foreign": "9", "foreign_line": 40,
         "start": 5.0, "end": 6.0},
    )


def _as_read(frame: pd.DataFrame) -> pd.DataFrame:
    """The dtypes the read gives: Arrow strings, categoricals, nullable ints, microseconds."""
    out = frame.copy()
    for col in _TEXT_COLUMNS:
        out[col] = out[col].astype(pd.ArrowDtype(pa.string()))
    for col in ("outcome", "file", "route", "method", "service", "worker", "status"):
        out[col] = out[col].astype("category")
    for col in ("start", "end"):
        out[col] = out[col].dt.as_unit("us")
    return out


def test_the_report_does_not_depend_on_the_frames_dtypes() -> None:
    plain = report_json(analyze_requests(_incident(), _stats(), lines=None))
    read = report_json(analyze_requests(_as_read(_incident()), _stats(), lines=None))
    assert plain == read
    kinds = {f["kind"] for f in plain["findings"]}
    assert kinds == {"duplicate_in_flight", "crossed_stream", "unlinked", "client_id_reuse",
                     "deprecated_header"}
    assert plain["summary"]["clock_offsets_ms"] == {"w.jsonl": 400.0}


def test_findings_at_one_time_are_listed_by_id_text_not_by_first_appearance() -> None:
    frame = requests_frame(
        {"request_id": "b", "start": 0.0, "end": 2.0}, {"request_id": "b", "start": 0.0, "end": 2.0},
        {"request_id": "a", "start": 0.0, "end": 2.0}, {"request_id": "a", "start": 0.0, "end": 2.0},
    )
    doc = report_json(analyze_requests(frame, _stats(), lines=None))
    assert [f["request_id"] for f in doc["findings"]] == ["a", "b"]


def test_json_text_keeps_a_file_name_that_is_not_utf8() -> None:
    # Python spells an undecodable byte of a file name as a lone surrogate; JSON can
    # escape it (RFC 8259), UTF-8 cannot encode it, so orjson refuses the document.
    stats = _stats()
    stats.ignored_files.append(FileNote(file="logs/\udcff.bin", reason="no JSON lines"))
    report = analyze_requests(_incident(), stats, lines=None)
    doc = json.loads(report_json_text(report))
    assert doc == json.loads(json.dumps(report_json(report)))
    assert doc["summary"]["ignored_files"][0]["file"] == "logs/\udcff.bin"


def test_report_requests_are_on_one_clock_and_name_their_caller() -> None:
    report = analyze_requests(_as_read(_incident()), _stats(), lines=None)
    requests = report.requests.set_index("span_id")
    # 0.7 s on the worker's clock, + 400 ms: the middle of B's [300, 500] ms, which A's
    # start (a failed caller: bounded from below only) keeps.
    assert requests.loc["wA", "start"] == at(1.1)
    assert requests.loc["A", "start"] == at(1.0)
    assert requests.loc["wA", "caller"] == "A" and requests.loc["A", "caller"] == "A"


def test_missing_ids_in_findings_are_none() -> None:
    frame = requests_frame(
        {"request_id": "a", "x_request_id": "c", "start": 0.0, "end": 2.0},
        {"request_id": "b", "x_request_id": "c", "span_id": None, "start": 1.0, "end": 3.0},
    )
    found = client_id_reuse(frame)
    assert found["span_id"].tolist() == ["s0"]
    assert found["evidence"].tolist() == [[{"file": "f.jsonl", "line": n} for n in (1, 2, 11, 12)]]
    assert "(spans s0, None)" in found.loc[0, "detail"]


def test_thousands_of_findings_are_built_without_garbage_collection_passes() -> None:
    # Their dicts and lists hold no cycles: each collection would only walk the heap.
    frame = requests_frame(*({"span_id": f"s{i}", "deprecated": "request-id",
                              "deprecated_line": i} for i in range(3000)))
    collections: list[str] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(phase)

    gc.callbacks.append(count)
    try:
        report = analyze_requests(frame, _stats(), lines=None)
        text = report_json_text(report)
        csv_text = report_csv(report)
    finally:
        gc.callbacks.remove(count)
    assert len(collections) <= 3, collections  # at most one as each pause ends
    assert len(json.loads(text)["findings"]) == 3000 and csv_text.count("\n") == 3001
    assert gc.isenabled()


def test_paused_gc_restores_the_collectors_state() -> None:
    with pytest.raises(RuntimeError), paused_gc():
        assert not gc.isenabled()
        raise RuntimeError
    assert gc.isenabled()
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
