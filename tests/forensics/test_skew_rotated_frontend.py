"""The rotated parts of one frontend log are on the reference frontend's clock.

docs/cli.md: the parts of one rotated log are on one clock, one process stamped them.
Each frontend part was placed by its own callers' workers: a part whose callers' worker
lines came a little early (the middleware's start stamped after the worker's) took an
offset of its own, 0.2 ms in a real run, and every time in it moved off its siblings'.
"""

from __future__ import annotations

from pathlib import Path

from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.forensics.records.read import read_partials
from ridtrace.forensics.rules.report import analyze_read, report_json
from tests.forensics.helpers import rt_at_us

_MS = 1000


def _call(i: int, t0: int, front: list[str], work: list[str], *, early_us: int = 0) -> None:
    span, ids = f"f{i:015x}", {"request_id": f"r{i}", "trace_id": f"{i + 1:032x}"}
    front += [rt_at_us(t0, "request.start", "frontend", span_id=span, **ids),
              rt_at_us(t0 + 100 * _MS, "request.end", "frontend", span_id=span, status=200,
                       outcome="ok", duration_ms=100.0, **ids)]
    linked = {"span_id": f"a{i:015x}", "parent_span_id": span, **ids}
    work += [rt_at_us(t0 - early_us, "worker.start", "worker", **linked),
             rt_at_us(t0 + 99 * _MS, "worker.end", "worker", outcome="ok", **linked)]


def test_every_part_of_the_frontend_log_stays_on_its_clock(tmp_path: Path) -> None:
    older: list[str] = []
    current: list[str] = []
    work: list[str] = []
    for i in range(5):  # the older part: its callers' workers logged 2 ms before them
        _call(i, (i + 1) * 1_000_000, older, work, early_us=2 * _MS)
    for i in range(5, 20):
        _call(i, (i + 1) * 1_000_000, current, work)
    (tmp_path / "frontend.jsonl.1").write_text("\n".join(older) + "\n")
    (tmp_path / "frontend.jsonl").write_text("\n".join(current) + "\n")
    (tmp_path / "worker.jsonl").write_text("\n".join(work) + "\n")
    report = report_json(analyze_read(read_partials(expand_inputs([str(tmp_path)]))))
    assert report["summary"]["clock_offsets_ms"] == {}, report["summary"]["clock_offsets_ms"]
