"""A worker whose callers all hung up or failed, having received its output, is placed
on their clock.

Such a caller did not wait for its worker to end, so it bounded the worker's offset
from below only; a worker ahead of the callers was then never moved (zero fits every
bound from below), and `trace` and `export jaeger` drew it starting after the caller
that got its output had ended. A caller that received what its worker made (the pair
of fingerprints says so) had the worker's first chunk before it ended: the worker
started before then, a bound from above.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.forensics.records.read import read_partials
from ridtrace.forensics.rules.report import analyze_read, report_json
from tests.forensics.helpers import rt_at_us

_MS = 1000


def _logs(directory: Path, skew_ms: int, *, got_output: bool = True) -> None:
    """Two callers ([10 s, +60 ms], [12 s, +60 ms]) whose clients hung up mid-stream,
    each holding the prefix its worker (20 ms in, cut short 30 ms after the caller)
    made; the worker's clock `skew_ms` ahead. `got_output` False: the callers hold no
    output (they failed before a chunk came)."""
    front, work = [], []
    for name, t0 in (("a", 10_000), ("b", 12_000)):
        ids = {"request_id": name, "trace_id": name * 32}
        caller = {**ids, "span_id": f"{name}1".rjust(16, "0")}
        end = {"status": 200, "outcome": "cancelled", "duration_ms": 60.0,
               "fp_in": f"in-{name}", **({"fp_out": f"cut-{name}"} if got_output else {})}
        front += [rt_at_us(t0 * _MS, "request.start", "frontend", **caller),
                  rt_at_us((t0 + 60) * _MS, "request.end", "frontend", **end, **caller)]
        linked = {**ids, "span_id": f"{name}2".rjust(16, "0"),
                  "parent_span_id": caller["span_id"]}
        work += [rt_at_us((t0 + 20 + skew_ms) * _MS, "worker.start", "worker",
                          fp_in=f"in-{name}", **linked),
                 rt_at_us((t0 + 90 + skew_ms) * _MS, "worker.end", "worker",
                          outcome="cancelled", fp_out=f"cut-{name}", **linked)]
    (directory / "frontend.jsonl").write_text("\n".join(front) + "\n")
    (directory / "worker.jsonl").write_text("\n".join(work) + "\n")


def _offsets(directory: Path) -> dict[str, float]:
    doc = report_json(analyze_read(read_partials(expand_inputs([str(directory)]))))
    assert doc["findings"] == []
    offsets: dict[str, float] = doc["summary"]["clock_offsets_ms"]
    return offsets


@pytest.mark.parametrize("skew_ms", [500, 3000])
def test_a_worker_ahead_of_callers_that_hung_up_is_moved_back(
    tmp_path: Path, skew_ms: int
) -> None:
    _logs(tmp_path, skew_ms)
    # Each link: the start no earlier than the caller's (offset >= -skew - 20 ms), the
    # start no later than the caller's end (offset <= -skew + 40 ms). The latter is
    # loose (a caller may hang up long after its worker began): the worker is placed
    # where its callers' starts place it, 20 ms early, not in the middle.
    assert _offsets(tmp_path) == {str(tmp_path / "worker.jsonl"): -skew_ms - 20.0}


@pytest.mark.parametrize("skew_ms", [-300, -2000])
def test_a_worker_behind_is_placed_by_its_callers_starts_as_before(
    tmp_path: Path, skew_ms: int
) -> None:
    # Its starts' bounds already keep it before its callers' ends: the loose bound moves
    # nothing (taken into the middle, it placed the worker 30 ms late here, 187 ms late
    # behind callers of 375 ms).
    _logs(tmp_path, skew_ms)
    assert _offsets(tmp_path) == {str(tmp_path / "worker.jsonl"): -skew_ms - 20.0}


def test_clocks_that_agree_are_left_alone(tmp_path: Path) -> None:
    _logs(tmp_path, 0)
    assert _offsets(tmp_path) == {}


def test_callers_that_got_nothing_bound_the_worker_from_below_only(tmp_path: Path) -> None:
    # A caller holding no output proves nothing of when its worker began.
    _logs(tmp_path, 3000, got_output=False)
    assert _offsets(tmp_path) == {}
