"""The rotated parts of one worker log are placed on one clock, by all their links.

docs/cli.md, *Clock skew*: the lines of one file are one process's, on one clock, and so
are the parts of one rotated log. Each part was placed by its own links, then every part
given the offset of the part with most spans: an older part whose callers all went away
(bounds from below only) outvoted the live part's tight bounds. A worker 2 s behind was
corrected by 1.6 s, and an output finished 10 ms after a timed-out caller's end (a
timeout's race) was drawn 390 ms before it: an Unlinked error, exit 1, that the same
lines in one file did not give.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.forensics.records.read import read_partials
from ridtrace.forensics.rules.report import analyze_read, report_json
from tests.forensics.helpers import rt_at_us

_MS = 1000
_BEHIND_MS = 2000  # the worker's clock


def _call(n: int, t0: int, length: int, work: tuple[int, int], front: list[str],
          worker: list[str], *, outcome: str) -> None:
    """One caller [t0, t0 + length] ms and its worker's span `work` (ms after t0) on the
    worker's clock; a caller that ended well got the worker's output."""
    ids = {"request_id": f"r{n}", "trace_id": f"{n + 1:032x}"}
    caller = {**ids, "span_id": f"f{n:015x}"}
    status = {"ok": 200, "cancelled": 499, "error": 504}[outcome]
    end = {"status": status, "outcome": outcome, "duration_ms": float(length),
           "fp_in": f"in-{n}", **({"fp_out": f"out-{n}"} if outcome == "ok" else {})}
    front += [rt_at_us(t0 * _MS, "request.start", "frontend", **caller),
              rt_at_us((t0 + length) * _MS, "request.end", "frontend", **end, **caller)]
    linked = {**ids, "span_id": f"a{n:015x}", "parent_span_id": caller["span_id"]}
    worker_outcome = "cancelled" if outcome == "cancelled" else "ok"
    output = {} if worker_outcome == "cancelled" else {"fp_out": f"out-{n}"}
    worker += [rt_at_us((t0 + work[0] - _BEHIND_MS) * _MS, "worker.start", "worker",
                        fp_in=f"in-{n}", **linked),
               rt_at_us((t0 + work[1] - _BEHIND_MS) * _MS, "worker.end", "worker",
                        outcome=worker_outcome, **output, **linked)]


def _logs(directory: Path, *, rotated: bool) -> None:
    front: list[str] = []
    older: list[str] = []
    live: list[str] = []
    for n in range(10):  # callers that went away at 200 ms; their worker queued 400 ms
        _call(n, 3000 + n * 100, 200, (400, 900), front, older, outcome="cancelled")
    for n in range(10, 13):  # ordinary calls: bounds from both sides
        _call(n, 8000 + (n - 10) * 300, 250, (1, 249), front, live, outcome="ok")
    # A caller that timed out at 1 s; its worker finished 10 ms later: a race, no loss.
    _call(13, 10_000, 1000, (1, 1010), front, live, outcome="error")
    (directory / "frontend.jsonl").write_text("\n".join(front) + "\n")
    if rotated:
        (directory / "worker.jsonl.1").write_text("\n".join(older) + "\n")
        (directory / "worker.jsonl").write_text("\n".join(live) + "\n")
    else:
        (directory / "worker.jsonl").write_text("\n".join(older + live) + "\n")


@pytest.mark.parametrize("rotated", [False, True], ids=["one-file", "rotated"])
def test_a_rotated_worker_log_is_placed_as_the_one_file_it_was(
    tmp_path: Path, rotated: bool
) -> None:
    _logs(tmp_path, rotated=rotated)
    doc = report_json(analyze_read(read_partials(expand_inputs([str(tmp_path)]))))
    assert doc["findings"] == []
    parts = ["worker.jsonl.1", "worker.jsonl"] if rotated else ["worker.jsonl"]
    offsets = doc["summary"]["clock_offsets_ms"]
    assert offsets == {str(tmp_path / name): offsets[str(tmp_path / "worker.jsonl")]
                       for name in parts}
    # The live part's ordinary calls bound it within a millisecond of the 2 s.
    assert abs(offsets[str(tmp_path / "worker.jsonl")] - _BEHIND_MS) <= 1, offsets
