"""A caller whose start line is not in the logs bounds its worker's clock only from above.

Its `request.start` rotated away, such a caller was read as an instant at its
`request.end`, and the clock-skew estimate took that instant for its whole request: a
worker span cannot fit in it, so the worker file's offset became the middle of the
impossible bounds, the worker's span centred on its caller's end (a worker 300 ms
ahead was moved by -50 ms and ran 200 ms past its caller; one 300 ms behind by +550 ms).
All such a caller says is that its worker ended before it did.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.forensics.records.read import read_partials
from ridtrace.forensics.rules.report import analyze_read, report_json
from tests.forensics.helpers import rt_at_us

_MS = 1000


def _logs(directory: Path, *, stated: bool = False) -> None:
    """Three callers of 500 ms on the frontend's clock, each served by its own worker for
    [+50 ms, +450 ms]. worker-8101's and worker-8103's clocks run 300 ms ahead,
    worker-8102's 300 ms behind. Only the first caller's request.start is in the log;
    the others' request.end states their duration when `stated`."""
    front: list[tuple[int, str]] = []
    workers: dict[str, list[str]] = {}
    for i, (skew_ms, started) in enumerate(((300, True), (-300, False), (300, False))):
        t0, span, trace = 1_000_000 * (i + 1), f"f{i:015x}", f"{i + 1:032x}"
        ids = {"request_id": f"r{i}", "trace_id": trace}
        if started:
            front.append((t0, rt_at_us(t0, "request.start", "frontend", span_id=span, **ids)))
        end = t0 + 500 * _MS
        duration = {"duration_ms": 500.0} if started or stated else {}
        front.append((end, rt_at_us(end, "request.end", "frontend", span_id=span, status=200,
                                 outcome="ok", fp_in=f"in{i}", fp_out=f"out{i}",
                                 **duration, **ids)))
        w0, w1 = t0 + (50 + skew_ms) * _MS, t0 + (450 + skew_ms) * _MS
        linked = {"span_id": f"w{i:015x}", "parent_span_id": span, **ids}
        workers[f"worker-{8101 + i}.jsonl"] = [
            rt_at_us(w0, "request.start", "worker", **linked),
            rt_at_us(w1, "worker.end", "worker", outcome="ok", fp_in=f"in{i}", fp_out=f"out{i}",
                  **linked),
            rt_at_us(w1, "request.end", "worker", status=200, outcome="ok", **linked),
        ]
    (directory / "frontend.jsonl").write_text(
        "\n".join(line for _, line in sorted(front)) + "\n")
    for name, lines in workers.items():
        (directory / name).write_text("\n".join(lines) + "\n")


def test_a_caller_without_its_start_line_does_not_place_its_worker(tmp_path: Path) -> None:
    _logs(tmp_path)
    doc = report_json(analyze_read(read_partials(expand_inputs([str(tmp_path)]))))
    assert doc["summary"]["clock_offsets_ms"] == {
        # Its caller's start known: the middle of [-350, -250].
        str(tmp_path / "worker-8101.jsonl"): -300.0,
        # Only ended before its caller (offset <= -250): its end at its caller's end.
        str(tmp_path / "worker-8103.jsonl"): -250.0,
        # Ended 650 ms before its caller: nothing says its clock is off (8102 absent).
    }
    assert doc["summary"]["errors"] == 0


def test_a_caller_whose_end_states_its_duration_places_its_worker(tmp_path: Path) -> None:
    # Its request.end's duration_ms dates its start back: bounded from both sides.
    _logs(tmp_path, stated=True)
    doc = report_json(analyze_read(read_partials(expand_inputs([str(tmp_path)]))))
    assert doc["summary"]["clock_offsets_ms"] == {
        str(tmp_path / "worker-8101.jsonl"): -300.0,
        # Started 250 ms before its caller did: the middle of [250, 350], not left behind.
        str(tmp_path / "worker-8102.jsonl"): 300.0,
        str(tmp_path / "worker-8103.jsonl"): -300.0,
    }
    assert doc["summary"]["errors"] == 0


@pytest.mark.extra("dask")
def test_the_dask_engine_reports_the_same_offsets(client: Any, tmp_path: Path) -> None:
    from ridtrace.forensics.dask_engine.engine import analyze_dask

    _logs(tmp_path)
    paths = [str(tmp_path)]
    want = report_json(analyze_read(read_partials(expand_inputs(paths))))
    got = report_json(analyze_dask(client, paths, block_bytes=256))
    assert got == want
    assert set(got["summary"]["clock_offsets_ms"]) == {str(tmp_path / "worker-8101.jsonl"),
                                                       str(tmp_path / "worker-8103.jsonl")}
