"""A worker's end logged just after its caller's is no clock skew.

A worker writes its end line after its last chunk went out; on one machine its caller
may log its own end first (by 0.1-4 ms at 50 calls at once, 9 ms in the demo's loaded
legacy run). Logs of one machine were "corrected" by those milliseconds: `trace` said
"clock offsets corrected" and `clock_offsets_ms` listed the worker file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.forensics.records.read import read_partials
from ridtrace.forensics.rules.report import analyze_read, report_json
from tests.forensics.helpers import rt_at_us

_MS = 1000


def _logs(directory: Path, *, skew_ms: int, worker_ms: tuple[int, int]) -> None:
    """Twenty callers of 100 ms, each served by the worker for `worker_ms` of it on the
    caller's clock, the worker's clock `skew_ms` ahead."""
    front, work = [], []
    for i in range(20):
        t0, span, ids = (i + 1) * 1_000_000, f"f{i:015x}", {
            "request_id": f"r{i}", "trace_id": f"{i + 1:032x}"}
        front += [rt_at_us(t0, "request.start", "frontend", span_id=span, **ids),
                  rt_at_us(t0 + 100 * _MS, "request.end", "frontend", span_id=span,
                           status=200, outcome="ok", duration_ms=100.0, **ids)]
        w0, w1 = (t0 + (ms + skew_ms) * _MS for ms in worker_ms)
        linked = {"span_id": f"w{i:015x}", "parent_span_id": span, **ids}
        work += [rt_at_us(w0, "request.start", "worker", **linked),
                 rt_at_us(w1, "worker.end", "worker", outcome="ok", **linked),
                 rt_at_us(w1, "request.end", "worker", status=200, outcome="ok", **linked)]
    (directory / "frontend.jsonl").write_text("\n".join(front) + "\n")
    (directory / "worker.jsonl").write_text("\n".join(work) + "\n")


@pytest.mark.parametrize(("skew_ms", "worker_ms", "want"), [
    (0, (1, 104), {}),  # the worker's end 4 ms after its caller's, one clock
    (0, (1, 120), {}),
    (400, (1, 99), {"worker.jsonl": -400.0}),  # a real skew is still corrected
    (-400, (1, 99), {"worker.jsonl": 400.0}),
    (400, (1, 104), {"worker.jsonl": -402.5}),  # no offset fits every link: their middle
])
def test_a_worker_ending_just_after_its_caller_is_on_its_callers_clock(
    tmp_path: Path, skew_ms: int, worker_ms: tuple[int, int], want: dict[str, float]
) -> None:
    _logs(tmp_path, skew_ms=skew_ms, worker_ms=worker_ms)
    doc = report_json(analyze_read(read_partials(expand_inputs([str(tmp_path)]))))
    offsets = {Path(name).name: ms for name, ms in doc["summary"]["clock_offsets_ms"].items()}
    assert offsets == want
