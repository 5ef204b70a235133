"""`export jaeger` lists each trace's spans in start order, as Jaeger's own JSON does.

A frontend span whose `request.start` is not in the logs is dated back by the duration
its `request.end` states; it kept its place, sorted by its line's time, after the
worker spans it called, so the trace's spans were no longer in start order.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.forensics.helpers import rt_at_us
from tests.support.inprocess_cli import run_in_process

_MS = 1000


def _logs(directory: Path) -> None:
    """A 500 ms caller whose request.start rotated away (only its request.end, at 1.5 s),
    served by a worker for [1.05 s, 1.45 s] and a second worker for [1.10 s, 1.40 s]."""
    ids = {"request_id": "r0", "trace_id": f"{1:032x}"}
    front = rt_at_us(1_500 * _MS, "request.end", "frontend", span_id="f" * 16, status=200,
                  outcome="ok", duration_ms=500.0, route="/v1/chat/completions", **ids)
    (directory / "frontend.jsonl").write_text(front + "\n")
    for port, span, (w0, w1) in ((8101, "a" * 16, (1_050, 1_450)),
                                 (8102, "b" * 16, (1_100, 1_400))):
        linked = {"span_id": span, "parent_span_id": "f" * 16, **ids}
        (directory / f"worker-{port}.jsonl").write_text("\n".join([
            rt_at_us(w0 * _MS, "request.start", "worker", **linked),
            rt_at_us(w1 * _MS, "worker.end", "worker", outcome="ok", **linked),
            rt_at_us(w1 * _MS, "request.end", "worker", status=200, outcome="ok", **linked),
        ]) + "\n")


def test_a_span_dated_back_by_its_stated_duration_lists_first(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    _logs(logs)
    out = tmp_path / "traces.json"
    code, _, stderr = run_in_process(["export", "jaeger", str(logs), "-o", str(out)])
    assert code == 0, stderr
    (trace,) = json.loads(out.read_text())["data"]
    spans = [(s["spanID"], s["startTime"]) for s in trace["spans"]]
    base = 1_795_946_400_000_000  # 2026-11-29T10:00:00Z in µs
    assert spans == [("f" * 16, base + 1_000 * _MS), ("a" * 16, base + 1_050 * _MS),
                     ("b" * 16, base + 1_100 * _MS)]
