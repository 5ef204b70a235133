"""A --since/--until window judges its requests' outputs against requests outside it.

Two legacy callers swapped streams: A (0.10–0.30 s) was delivered B's worker output and
B (0.15–0.60 s) A's. A window that keeps B alone lost the producer of what B received,
so B's crossed stream went unreported, and B's own worker output, delivered to A, was
reported as an `unlinked` error that "no caller received".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.forensics.records.read import read_partials
from ridtrace.forensics.rules.report import analyze_read, parse_time, report_json
from tests.forensics.helpers import rt, ts

A, B, A_WORK, B_WORK = "1" * 16, "2" * 16, "3" * 16, "4" * 16
A_IN, B_IN, A_OUT, B_OUT = "fa01", "fb02", "0a01", "0b02"


def _front(event: str, span: str, seconds: float, **fields: object) -> str:
    return rt(event, time=ts(seconds), request_id=f"r-{span[0]}", trace_id=span * 2,
              span_id=span, **fields)


def _work(event: str, span: str, caller: str, seconds: float, **fields: object) -> str:
    return rt(event, time=ts(seconds), request_id=f"r-{caller[0]}", trace_id=caller * 2,
              span_id=span, parent_span_id=caller, service="worker-1", **fields)


def _swapped_streams(directory: Path) -> None:
    front = [_front("request.start", A, 0.10), _front("request.start", B, 0.15),
             _front("request.end", A, 0.30, status=200, outcome="ok", fp_in=A_IN,
                    fp_out=B_OUT),
             _front("request.end", B, 0.60, status=200, outcome="ok", fp_in=B_IN,
                    fp_out=A_OUT)]
    work = [_work("worker.start", A_WORK, A, 0.101, fp_in=A_IN),
            _work("worker.start", B_WORK, B, 0.151, fp_in=B_IN),
            _work("worker.end", A_WORK, A, 0.25, outcome="ok", fp_out=A_OUT),
            _work("worker.end", B_WORK, B, 0.28, outcome="ok", fp_out=B_OUT)]
    (directory / "frontend.jsonl").write_text("".join(line + "\n" for line in front))
    (directory / "worker.jsonl").write_text("".join(line + "\n" for line in work))


def _findings(directory: Path, **window: str) -> tuple[list[tuple[str, str]], int]:
    bounds = {name: parse_time(value) for name, value in window.items()}
    read = read_partials(expand_inputs([str(directory)]), **bounds)
    doc = report_json(analyze_read(read, **bounds))
    return [(f["kind"], f["span_id"]) for f in doc["findings"]], doc["summary"]["requests"]


def test_both_crossed_streams_are_found_without_a_window(tmp_path: Path) -> None:
    _swapped_streams(tmp_path)
    assert _findings(tmp_path) == ([("crossed_stream", A), ("crossed_stream", B)], 2)


@pytest.mark.parametrize(("window", "kept"), [
    ({"since": "2026-11-29T10:00:00.400Z"}, B),
    ({"until": "2026-11-29T10:00:00.120Z"}, A),
])
def test_a_window_keeping_one_caller_reports_its_crossed_stream_alone(
    tmp_path: Path, window: dict[str, str], kept: str,
) -> None:
    _swapped_streams(tmp_path)
    # The other caller is evidence, not a request of the window: not counted, not reported.
    assert _findings(tmp_path, **window) == ([("crossed_stream", kept)], 1)
