"""A caller that failed still started before its worker did.

Only callers that ended well bounded a worker file's clock, so a failed caller's worker
was placed by the others alone, at the edge of their bounds nearest zero: a worker
5 s ahead was moved by -4.9 s, its finished output landed 50 ms after its failed
caller's end, and the lost output was excused as a timeout's race (no `unlinked`, exit
0, where the same logs on one clock give the error). A failed caller now bounds its
worker from below, and a corrected file takes the middle of the offsets that fit.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.forensics.records.read import read_partials
from ridtrace.forensics.rules.report import analyze_read, report_json
from tests.forensics.helpers import rt_at_us

_MS = 1000


def _logs(directory: Path, skew_ms: int) -> None:
    """A caller that ended well ([10, 11] s, its worker 100 ms in and out) and one that
    failed ([12, 13] s, its worker 50 ms in and out finished output no caller got); the
    worker's clock `skew_ms` ahead."""
    front, work = [], []
    for name, t0, outcome, (w0, w1) in (("a", 10_000, "ok", (100, 900)),
                                         ("b", 12_000, "error", (50, 950))):
        ids = {"request_id": name, "trace_id": name * 32}
        caller = {**ids, "span_id": f"{name}1".rjust(16, "0")}
        end = {"status": 200 if outcome == "ok" else 500, "outcome": outcome,
               "duration_ms": 1000.0, "fp_in": f"in-{name}"}
        if outcome == "ok":
            end["fp_out"] = f"out-{name}"
        front += [rt_at_us(t0 * _MS, "request.start", "frontend", **caller),
                  rt_at_us((t0 + 1000) * _MS, "request.end", "frontend", **end, **caller)]
        linked = {**ids, "span_id": f"{name}2".rjust(16, "0"), "parent_span_id": caller["span_id"]}
        work += [rt_at_us((t0 + w0 + skew_ms) * _MS, "worker.start", "worker",
                          fp_in=f"in-{name}", **linked),
                 rt_at_us((t0 + w1 + skew_ms) * _MS, "worker.end", "worker", outcome="ok",
                          fp_out=f"out-{name}", **linked)]
    (directory / "frontend.jsonl").write_text("\n".join(front) + "\n")
    (directory / "worker.jsonl").write_text("\n".join(work) + "\n")


@pytest.mark.parametrize("skew_ms", [0, 5000, -5000])
def test_a_failed_callers_lost_output_is_found_whatever_the_workers_clock(
    tmp_path: Path, skew_ms: int
) -> None:
    _logs(tmp_path, skew_ms)
    doc = report_json(analyze_read(read_partials(expand_inputs([str(tmp_path)]))))
    assert [(f["kind"], f["request_id"]) for f in doc["findings"]] == [("unlinked", "b")]
    offsets = doc["summary"]["clock_offsets_ms"]
    # a's link bounds it to [-skew - 100, -skew + 100] ms, b's start to >= -skew - 50:
    # the middle of [-skew - 50, -skew + 100].
    assert offsets == ({} if not skew_ms else {str(tmp_path / "worker.jsonl"): -skew_ms + 25.0})
