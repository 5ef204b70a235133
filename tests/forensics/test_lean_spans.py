"""The lean per-span pass (`reading.lean`) picks what the full event path picks.

`ridtrace analyze` builds requests from raw fields in one DuckDB pass; the event views
build them from normalised events (`reading.sql.NORMALIZED`, then `spans_select`).
Over the same lines (a lean read keeps the evidence lines) both must give the same
request rows, but for the display-only fields the lean pass leaves null, on every
shape of line the two formats have.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from ridtrace.forensics.reading.connection import connect
from ridtrace.forensics.reading.events import load_events
from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.forensics.reading.parallel import read_all
from ridtrace.forensics.reading.span_sql import DISPLAY_FIELDS, VIEW_FIELDS, spans_select
from ridtrace.forensics.reading.table import LogTable
from ridtrace.forensics.records.read import read_partials
from ridtrace.forensics.records.spans import build_requests, requests_from_partials
from ridtrace.testing.dynamo import DynamoSpec, write_dynamo_logs
from ridtrace.testing.synth import SynthSpec, write_logs
from tests.forensics.helpers import rt

SAMPLE = Path(__file__).parent / "data" / "dynamo-jsonl-sample.jsonl"


def _both(paths: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    read = read_partials(expand_inputs(paths))
    lean = requests_from_partials(read.partials, read.files)
    full = build_requests(load_events(paths, lean=True).events)
    return lean, full


def _assert_same(lean: pd.DataFrame, full: pd.DataFrame) -> None:
    assert len(lean) == len(full) > 0
    for col in full.columns:
        if col in VIEW_FIELDS:  # the lean pass reads none: not even a null column
            assert col not in lean, col
            continue
        if col in DISPLAY_FIELDS:
            assert lean[col].isna().all(), col
            continue
        got = lean[col].astype(object).where(lean[col].notna(), None).tolist()
        want = full[col].astype(object).where(full[col].notna(), None).tolist()
        assert got == want, col


def test_dynamo_lines_of_every_kind(tmp_path: Path) -> None:
    logs = write_dynamo_logs(
        tmp_path / "dyn", DynamoSpec(requests=400, duplicates=4, cancelled=3, deprecated_every=7)
    )
    shutil.copy(SAMPLE, tmp_path / "dyn" / "sample.jsonl")
    # A SPAN_CLOSED line naming an Unlinked error and a header is neither finding's
    # evidence; an Unlinked error with a deprecated-header message is only Unlinked.
    extra = [
        {"time": "2026-10-02T14:03:12.000000Z", "target": "x", "message": "SPAN_CLOSED",
         "error": "Unlinked response", "header": "request-id", "span_id": "s1",
         "trace_id": "t1"},
        {"time": "2026-10-02T14:03:12.100000Z", "target": "x",
         "message": "request-id header is deprecated", "error": "Unlinked request x",
         "span_id": "s1", "trace_id": "t1", "span_name": "handle_payload"},
        {"time": "2026-10-02T14:03:12.200000Z", "target": "x",
         "message": "x-dynamo-request-id header is deprecated", "span_id": "s2",
         "trace_id": "t2", "span_name": "http-request", "parent_id": "p2"},
        # Dynamo's OpenAI routes: the Unlinked error is the message itself.
        {"time": "2026-10-02T14:03:12.300000Z", "target": "x", "message":
         "Internal server error: Failed to generate completions: Unlinked response; "
         "response task was dropped or cancelled", "span_id": "s3", "trace_id": "t3",
         "span_name": "http-request"},
    ]
    (tmp_path / "dyn" / "extra.jsonl").write_text("".join(json.dumps(e) + "\n" for e in extra))
    lean, full = _both([str(p) for p in sorted((tmp_path / "dyn").iterdir())])
    assert logs.files and (lean["unlinked"].notna().sum() > 0)
    assert lean["deprecated"].notna().sum() > 0
    _assert_same(lean, full)


def test_ridtrace_lines_of_every_kind(tmp_path: Path) -> None:
    truth = write_logs(
        tmp_path / "rt",
        SynthSpec(requests=300, crossed=2, collisions=2, duplicates=2, client_reuse=2,
                  deprecated_every=9, engine_noise=True),
    )
    lean, full = _both([str(p) for p in truth.files])
    assert lean["fp_out"].notna().any() and (lean["side"] == "worker").any()
    _assert_same(lean, full)


def test_a_requests_own_list_of_deprecated_headers_wins_over_the_warn_before_it(
    tmp_path: Path,
) -> None:
    # The middleware writes its WARN (one header) before request.start (all of them).
    both = "x-dynamo-request-id,request-id"
    ctx = {"request_id": "r1", "trace_id": "1" * 32, "span_id": "1" * 16}
    lines = [rt("deprecated_header", header="request-id", **ctx),
             rt("request.start", deprecated_headers=both, **ctx),
             rt("request.end", deprecated_headers=both, outcome="ok", **ctx),
             rt("deprecated_header", header="request-id", **{**ctx, "span_id": "2" * 16})]
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    lean, full = _both([str(tmp_path / "frontend.jsonl")])
    _assert_same(lean, full)
    assert lean["deprecated"].tolist() == [both, "request-id"]
    assert lean["deprecated_line"].tolist() == [2, 4]


def test_a_requests_own_list_wins_when_a_rotation_cut_it_from_the_warn(
    tmp_path: Path,
) -> None:
    # The WARN closed the rotated part; request.start, listing both headers, opened the
    # live file. Read whole, the request counts both; cut, it took the WARN's one.
    both = "x-dynamo-request-id,request-id"
    ctx = {"request_id": "r1", "trace_id": "1" * 32, "span_id": "1" * 16}
    (tmp_path / "frontend.jsonl.1").write_text(
        rt("deprecated_header", header="request-id", **ctx) + "\n")
    (tmp_path / "frontend.jsonl").write_text(
        rt("request.start", deprecated_headers=both, **ctx) + "\n"
        + rt("request.end", deprecated_headers=both, outcome="ok", **ctx) + "\n")
    lean, full = _both([str(tmp_path)])
    _assert_same(lean, full)
    assert lean["deprecated"].tolist() == [both]
    assert lean["deprecated_line"].tolist() == [1]
    assert lean["deprecated_file"].tolist() == [str(tmp_path / "frontend.jsonl")]


def _ends(paths: list[str]) -> tuple[dict[tuple[str, str], tuple[bool, ...]], ...]:
    """Per span (closing, request_end, worker_end): lean pass, then the event path."""
    sources = expand_inputs(paths)
    cols = ("closing", "request_end", "worker_end")

    def lean(table: LogTable, _: int) -> list[dict[str, object]]:
        return table.spans()[0].select(["trace_id", "span_id", *cols]).to_pylist()

    def full(table: LogTable, _: int) -> list[dict[str, object]]:
        events = table.events()[0]
        events = events.append_column("rn", pa.array(np.arange(events.num_rows)))
        con = connect()
        con.register("ridtrace_events", events)
        try:
            spans = con.sql(spans_select("ridtrace_events")).to_arrow_table()
        finally:
            con.close()
        return spans.select(["trace_id", "span_id", *cols]).to_pylist()

    out = []
    for use in (lean, full):
        rows = [r for part in read_all(sources, use, lean=True).results for r in part]
        out.append({(r["trace_id"], r["span_id"]): tuple(r[c] for c in cols) for r in rows})
    return out[0], out[1]


def test_span_ends_for_the_live_rules(tmp_path: Path) -> None:
    write_dynamo_logs(tmp_path / "dyn", DynamoSpec(requests=200, duplicates=2, cancelled=2,
                                                   deprecated_every=5))
    shutil.copy(SAMPLE, tmp_path / "dyn" / "sample.jsonl")
    truth = write_logs(tmp_path / "rt", SynthSpec(requests=200, crossed=2, collisions=2))
    paths = [str(p) for p in sorted((tmp_path / "dyn").iterdir())] + [
        str(p) for p in truth.files
    ]
    lean, full = _ends(paths)
    assert lean == full
    values = list(lean.values())
    assert any(v[1] for v in values) and any(v[2] for v in values)
    assert any(v[0] and not (v[1] or v[2]) for v in values)  # span.closed / SPAN_CLOSED
