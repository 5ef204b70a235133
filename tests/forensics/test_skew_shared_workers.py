"""Replicas of a gateway sharing their workers are placed on one clock together.

The reference frontend file (the one with most requests) placed each worker file by its
own callers alone. A worker that served it only an instant Conflict refusal inside a
400 ms request was put in the middle of those loose bounds, ~200 ms from its clock,
though the other replica's request it served bounded it to a millisecond: `trace` drew
that request ending before its worker's span, and `export jaeger` a child outside its
parent. Replicas on one machine's clock are one clock: every replica's callers place
the workers at once, kept when each replica then fits at zero.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.forensics.records.read import read_partials
from ridtrace.forensics.rules.report import analyze_read, report_json
from tests.forensics.helpers import rt_at_us

_MS = 1000
_T0 = 10_000  # ms after the helper's T0: room for a clock behind


def _request(lines: dict[str, list[str]], front: str, name: str, at: int,
             served: tuple[str, int, int], refused: tuple[str, int] | None = None,
             *, skew: dict[str, int]) -> None:
    """A caller [at, at + 400] ms in `front`, served by (worker file, start, end) ms
    after it began, after an instant refusal by (worker file, at ms) when `refused`."""
    ids = {"request_id": name, "trace_id": name.ljust(32, "0")}
    caller = name.ljust(16, "0")
    lines[front] += [
        rt_at_us((_T0 + at) * _MS, "request.start", "frontend", span_id=caller, **ids),
        rt_at_us((_T0 + at + 400) * _MS, "request.end", "frontend", span_id=caller,
                 status=200, outcome="ok", fp_in=f"in-{name}", fp_out=f"out-{name}", **ids),
    ]
    if refused is not None:
        worker, when = refused
        lines[worker].append(rt_at_us((_T0 + at + when + skew[worker]) * _MS, "worker.refused",
                                      "worker", span_id=(name + "r").ljust(16, "0"),
                                      parent_span_id=caller, outcome="conflict", **ids))
    worker, start, end = served
    span = {"span_id": (name + "w").ljust(16, "0"), "parent_span_id": caller, **ids}
    lines[worker] += [
        rt_at_us((_T0 + at + start + skew[worker]) * _MS, "worker.start", "worker",
                 fp_in=f"in-{name}", **span),
        rt_at_us((_T0 + at + end + skew[worker]) * _MS, "worker.end", "worker", outcome="ok",
                 fp_in=f"in-{name}", fp_out=f"out-{name}", **span),
    ]


@pytest.mark.parametrize("skew_ms", [-100, 400, 750])
@pytest.mark.parametrize("front", ["frontend", "zz-frontend"])  # named before the workers, after
def test_a_worker_is_placed_by_the_tight_bound_of_another_replicas_request(
    tmp_path: Path, skew_ms: int, front: str,
) -> None:
    skew = {"w1": skew_ms, "w2": 0}
    lines: dict[str, list[str]] = {"a": [], "b": [], "w1": [], "w2": []}
    # The reference (three requests): w1 only refused one of them, at once.
    _request(lines, "a", "a1", 0, ("w2", 5, 395), skew=skew)
    _request(lines, "a", "a2", 1000, ("w2", 5, 395), skew=skew)
    _request(lines, "a", "a3", 2000, ("w2", 8, 396), refused=("w1", 4), skew=skew)
    # The other replica: w1 served one of its requests, inside it to a millisecond.
    _request(lines, "b", "b1", 3000, ("w1", 1, 399), skew=skew)
    _request(lines, "b", "b2", 4000, ("w2", 5, 395), skew=skew)
    for name, file in (("a", f"{front}-a"), ("b", f"{front}-b"), ("w1", "worker-1"),
                       ("w2", "worker-2")):
        (tmp_path / f"{file}.jsonl").write_text("\n".join(sorted(lines[name])) + "\n")
    doc = report_json(analyze_read(read_partials(expand_inputs([str(tmp_path)]))))
    offsets = doc["summary"]["clock_offsets_ms"]
    assert set(offsets) == {str(tmp_path / "worker-1.jsonl")}
    assert offsets[str(tmp_path / "worker-1.jsonl")] == pytest.approx(-skew_ms, abs=1.0)
