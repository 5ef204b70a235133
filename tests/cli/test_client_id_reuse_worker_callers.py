"""`client_id_reuse` counts the callers seen only through their worker spans.

`summary.requests` and `duplicate_in_flight` count a caller whose frontend logs are
absent by its worker spans; `client_id_reuse` looked at frontend spans alone, so two such
callers in flight under one client id (or one of them beside a frontend request) were no
finding, where the same spans under one request_id were a duplicate in flight.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import analyze_json
from tests.forensics.helpers import rt_at_us
from tests.support.extras import ENGINES

_MS = 1000


def _span(n: int, side: str, *, start_ms: int, parent: str | None = None) -> list[str]:
    ids = {"request_id": f"r{n}", "x_request_id": "c0", "trace_id": f"{n:032x}",
           "span_id": f"{side[0]}{n:015x}", **({"parent_span_id": parent} if parent else {})}
    first, last = (("request.start", "request.end") if side == "frontend"
                   else ("worker.start", "worker.end"))
    end = {"status": 200} if side == "frontend" else {"fp_out": f"out{n}"}
    return [rt_at_us(start_ms * _MS, first, side, **ids),
            rt_at_us((start_ms + 500) * _MS, last, side, outcome="ok", **end, **ids)]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("front", "work", "findings"), [
    ([], [(2, 0), (3, 100)], 1),  # two callers known by their worker spans alone
    ([1], [(2, 100)], 1),  # a frontend request and a caller known by its worker span
    ([1], [(1, 100)], 0),  # a frontend request and its own worker span: one request
    ([], [(2, 0), (3, 600)], 0),  # one after the other
])
def test_callers_seen_through_worker_spans_reuse_a_client_id(
    tmp_path: Path, engine: str, front: list[int], work: list[tuple[int, int]], findings: int
) -> None:
    (tmp_path / "frontend.jsonl").write_text("".join(
        line + "\n" for n in front for line in _span(n, "frontend", start_ms=0)))
    (tmp_path / "worker.jsonl").write_text("".join(
        line + "\n" for n, at in work
        for line in _span(n, "worker", start_ms=at,
                          parent=f"f{n:015x}" if n in front else f"{n:016x}")))
    _, doc = analyze_json(str(tmp_path), "--engine", engine, "--allow-incomplete")
    reuse = [f for f in doc["findings"] if f["kind"] == "client_id_reuse"]
    assert len(reuse) == findings, doc["findings"]
    assert all(f["x_request_id"] == "c0" for f in reuse)
