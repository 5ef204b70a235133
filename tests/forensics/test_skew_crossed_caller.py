"""A caller given another worker's reply did not wait for its own worker.

Under the legacy id policy two callers hold one id; the one whose own worker is slow
can be handed the other's reply, end well with it, and leave its own worker running on
long after. Taken as a caller that waited for its worker, it bounded that worker's clock
from above by its end: on a loaded run a tenth of the links said so, and a worker on the
frontend's own machine was put 64 ms behind (`clock_offsets_ms`, and every time `trace`
and the overlaps use). Its reply is not its worker's (`fp_out` differs): it bounds the
worker from below only, as a caller that failed does.
"""

from __future__ import annotations

from pathlib import Path

from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.forensics.records.read import read_partials
from ridtrace.forensics.rules.report import analyze_read, report_json
from tests.forensics.helpers import rt_at_us

_MS = 1000
_T0 = 10_000  # ms after the helper's T0


def _ids(name: str) -> dict[str, str]:
    return {"request_id": name, "trace_id": name.ljust(32, "0"),
            "span_id": name.ljust(16, "0")}


def _request(front: list[str], work: list[str], name: str, start: int, end: int,
             worker: tuple[int, int], *, got: str, made: str) -> None:
    """A caller [start, end] ms whose own worker span runs `worker`, made `made`; the
    caller received `got`. One clock for both files."""
    caller = _ids(name)
    span = {"request_id": name, "trace_id": caller["trace_id"],
            "span_id": (name + "w").ljust(16, "0"), "parent_span_id": caller["span_id"]}
    front.append(rt_at_us((_T0 + start) * _MS, "request.start", "frontend", **caller))
    front.append(rt_at_us((_T0 + end) * _MS, "request.end", "frontend",
                          status=200, outcome="ok", fp_in=f"in-{name}", fp_out=got, **caller))
    work.append(rt_at_us((_T0 + worker[0]) * _MS, "worker.start", "worker",
                         fp_in=f"in-{name}", **span))
    work.append(rt_at_us((_T0 + worker[1]) * _MS, "worker.end", "worker", outcome="ok",
                         fp_in=f"in-{name}", fp_out=made, **span))


def test_callers_handed_another_workers_reply_do_not_move_their_workers_clock(
    tmp_path: Path,
) -> None:
    front: list[str] = []
    work: list[str] = []
    # Two callers that waited for their own workers, which ran inside them.
    _request(front, work, "a1", 0, 1000, (5, 995), got="out-a1", made="out-a1")
    _request(front, work, "a2", 2000, 3000, (2005, 2995), got="out-a2", made="out-a2")
    # Three crossings: c's worker slow to start (150 ms: a loaded frontend's dispatch),
    # c handed at 300 ms the reply of a caller whose lines are elsewhere (another
    # frontend replica's), its own worker ending at 400 ms.
    for n, at in enumerate((5000, 7000, 9000)):
        _request(front, work, f"c{n}", at, at + 300, (at + 150, at + 400),
                 got=f"out-elsewhere{n}", made=f"out-c{n}")
    (tmp_path / "frontend.jsonl").write_text("\n".join(sorted(front)) + "\n")
    (tmp_path / "worker.jsonl").write_text("\n".join(sorted(work)) + "\n")
    doc = report_json(analyze_read(read_partials(expand_inputs([str(tmp_path)]))))
    assert doc["summary"]["clock_offsets_ms"] == {}  # was -125 ms: inside c's bounds
