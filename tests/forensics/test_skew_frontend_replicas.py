"""Two frontend replicas, each logging to a file of its own on a clock of its own, in
front of one worker pool.

Frontend files were all taken as the reference clock, only worker files corrected: a
replica 150 ms ahead made sequential reuse of one id a duplicate in flight (a false
error, exit 1), and one 500 ms behind hid two callers really in flight together ("No
findings.", exit 0). The workers both replicas share place the second replica's clock.
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


def _call(i: int, t0: int, rid: str, front: list[str], work: list[str], *,
          ms: int = 100) -> None:
    """One caller of `ms` ms under request id `rid`, served by the worker for most of it."""
    span, ids = f"f{i:015x}", {"request_id": rid, "trace_id": f"{i + 1:032x}"}
    front += [rt_at_us(t0, "request.start", "frontend", span_id=span, **ids),
              rt_at_us(t0 + ms * _MS, "request.end", "frontend", span_id=span, status=200,
                       outcome="ok", duration_ms=float(ms), **ids)]
    linked = {"span_id": f"a{i:015x}", "parent_span_id": span, **ids}
    work += [rt_at_us(t0 + 1 * _MS, "worker.start", "worker", **linked),
             rt_at_us(t0 + (ms - 1) * _MS, "worker.end", "worker", outcome="ok", **linked)]


def _report(directory: Path, replica_ahead_ms: int, *, together: bool) -> dict[str, Any]:
    """Thirty calls alternating between the replicas, each on an id of its own; then two
    calls on one id, 50 ms apart (`together`: in flight at once) or 150 ms apart (one
    after the other), the second on the replica whose clock is `replica_ahead_ms` ahead."""
    first: list[str] = []
    second: list[str] = []
    work: list[str] = []
    for i in range(30):
        _call(i, (i + 1) * 1_000_000, f"r{i}", first if i % 2 else second, work)
    t0 = 40_000_000
    _call(40, t0, "shared", first, work)
    _call(41, t0 + (50 if together else 150) * _MS, "shared", second, work)
    ahead = replica_ahead_ms * _MS
    moved = []
    for line in second:
        moved.append(_shifted(line, ahead))
    (directory / "frontend-a.jsonl").write_text("\n".join(first) + "\n")
    (directory / "frontend-b.jsonl").write_text("\n".join(moved) + "\n")
    (directory / "worker.jsonl").write_text("\n".join(work) + "\n")
    return report_json(analyze_read(read_partials(expand_inputs([str(directory)]))))


def _shifted(line: str, us: int) -> str:
    import json
    from datetime import datetime, timedelta

    record = json.loads(line)
    at = datetime.fromisoformat(record["time"].replace("Z", "+00:00")) + timedelta(microseconds=us)
    record["time"] = at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return json.dumps(record)


@pytest.mark.parametrize(("ahead_ms", "together", "duplicates"), [
    (0, False, 0), (0, True, 1),
    (150, False, 0),  # sequential, read as overlapping on the uncorrected clock
    (-500, True, 1),  # together, read as 450 ms apart on the uncorrected clock
])
def test_a_frontend_replicas_clock_is_placed_by_the_workers_it_shares(
    tmp_path: Path, ahead_ms: int, together: bool, duplicates: int
) -> None:
    summary = _report(tmp_path, ahead_ms, together=together)["summary"]
    assert summary["duplicate_in_flight"] == duplicates
    offsets = {Path(name).name: ms for name, ms in summary["clock_offsets_ms"].items()}
    if ahead_ms:
        assert list(offsets) == ["frontend-b.jsonl"]
        assert offsets["frontend-b.jsonl"] == pytest.approx(-ahead_ms, abs=2)
    else:
        assert offsets == {}
