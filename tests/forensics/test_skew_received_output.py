"""A worker's output that another caller received bounds the worker's clock from above.

Under the legacy id policy a caller (a) fails with a 500 while its worker still streams,
and the output goes to the caller that took its id (b). The failed caller bounds its
worker's clock from below only, so a worker file whose other spans bound it loosely
(here b's first attempt, refused with a Conflict) was placed at the middle of those
loose bounds: 0.36 s late, its span drawn running past the end of the caller that
received its output (`ridtrace trace`, `export jaeger`, the reported offset). The caller
that received the whole output ended after the worker sent it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.forensics.records.read import read_partials
from ridtrace.forensics.rules.report import analyze_read, report_json
from tests.forensics.helpers import rt_at_us

_MS = 1000
_T0 = 10_000  # ms after the helper's T0: room for a clock behind


def _logs(directory: Path, skew_ms: int, *, received: bool = True) -> None:
    """Caller a [0, 280] ms fails; its worker runs [5, 1000] ms and finishes output that
    caller b [274, 1040] ms received (`received`: else b's own); b's first attempt was
    refused by the same worker at 282 ms. The worker's clock is `skew_ms` ahead."""
    a = {"request_id": "a", "trace_id": "a" * 32, "span_id": "000000000000000a"}
    b = {"request_id": "b", "trace_id": "b" * 32, "span_id": "000000000000000b"}
    front = [
        rt_at_us(_T0 * _MS, "request.start", "frontend", **a),
        rt_at_us((_T0 + 274) * _MS, "request.start", "frontend", **b),
        rt_at_us((_T0 + 280) * _MS, "request.end", "frontend", status=500, outcome="error",
                 fp_in="in-a", duration_ms=280.0, **a),
        rt_at_us((_T0 + 1040) * _MS, "request.end", "frontend", status=200, outcome="ok",
                 fp_in="in-b", fp_out="out-a" if received else "out-b", duration_ms=766.0,
                 **b),
    ]
    made = {"request_id": "a", "trace_id": a["trace_id"], "span_id": "00000000000000a2",
            "parent_span_id": a["span_id"]}
    refused = {"request_id": "b", "trace_id": b["trace_id"], "span_id": "00000000000000b2",
               "parent_span_id": b["span_id"]}
    work = [
        rt_at_us((_T0 + 5 + skew_ms) * _MS, "worker.start", "worker", fp_in="in-a", **made),
        rt_at_us((_T0 + 282 + skew_ms) * _MS, "worker.refused", "worker", outcome="conflict",
                 **refused),
        rt_at_us((_T0 + 1000 + skew_ms) * _MS, "worker.end", "worker", outcome="ok",
                 fp_in="in-a", fp_out="out-a", **made),
    ]
    (directory / "frontend.jsonl").write_text("\n".join(front) + "\n")
    (directory / "worker.jsonl").write_text("\n".join(work) + "\n")


def _offset_ms(directory: Path) -> float:
    doc = report_json(analyze_read(read_partials(expand_inputs([str(directory)]))))
    offsets = doc["summary"]["clock_offsets_ms"]
    return float(offsets.get(str(directory / "worker.jsonl"), 0.0))


@pytest.mark.parametrize("skew_ms", [-700, 700])
def test_a_worker_is_placed_before_the_end_of_the_caller_that_received_its_output(
    tmp_path: Path, skew_ms: int
) -> None:
    _logs(tmp_path, skew_ms)
    # a's start bounds the offset from below (-skew - 5 ms), b's end from above through
    # the output it received (-skew + 40 ms): the middle of the two.
    assert _offset_ms(tmp_path) == pytest.approx(-skew_ms + 17.5)


def test_output_no_caller_is_known_to_have_received_bounds_nothing_more(tmp_path: Path) -> None:
    _logs(tmp_path, -700, received=False)
    # Only a's start and the refused attempt inside b: the middle of [695, 1458] ms.
    assert _offset_ms(tmp_path) == pytest.approx(1076.5)


def test_trace_draws_the_worker_inside_the_caller_that_received_its_output(
    tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from ridtrace.cli.main import main

    _logs(tmp_path, -700)
    result = CliRunner().invoke(main, ["trace", "a", str(tmp_path), "--format", "json"])
    assert result.exit_code == 0, result.output
    (request,) = json.loads(result.output)["requests"]
    assert request["start"] == "2026-11-29T10:00:10.000000Z"
    (worker,) = [s for s in request["spans"] if s["span_id"] == "00000000000000a2"]
    # b ended 1040 ms after a started, with the worker's whole output.
    assert 995.0 <= worker["end_ms"] <= 1040.0
