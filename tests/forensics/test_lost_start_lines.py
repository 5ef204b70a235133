"""A ridtrace request whose `request.start` is lost starts by the duration its end states.

A torn line, a rotation or a crash can leave a request with its `request.end` alone. It
states how long the request took (`duration_ms`): read as an instant at its end, it held
its id at no time before, and a second holder of that id in flight during it was no
duplicate ("No findings.", exit 0). Dynamo's spans are dated back the same way
(`test_instant_spans.py`). A request whose start line is read starts there, whatever the
duration its end states.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ridtrace.forensics.live.follow import Follower, FollowSettings
from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.forensics.records.read import read_partials
from ridtrace.forensics.rules.report import analyze_read, report_json
from tests.forensics.helpers import follow_as_written, rt_at_us

_S = 1_000_000


def _logs(directory: Path, *, lost_start: bool = True, rid: str = "dup-1") -> Path:
    """Two frontend requests that held id `rid`: span a1 over [1 s, 6 s] (its start
    line lost when `lost_start`), span b2 over [3 s, 4 s]."""
    n = f"{len(rid):x}"  # each id's spans their own
    a = {"request_id": rid, "trace_id": "a" * 30 + n + "1", "span_id": "a" * 14 + n + "1"}
    b = {"request_id": rid, "trace_id": "b" * 30 + n + "2", "span_id": "b" * 14 + n + "2"}
    lines = [(3 * _S, rt_at_us(3 * _S, "request.start", "frontend", **b)),
             (4 * _S, rt_at_us(4 * _S, "request.end", "frontend", status=200, outcome="ok",
                                duration_ms=1000.0, **b)),
             (6 * _S, rt_at_us(6 * _S, "request.end", "frontend", status=200, outcome="ok",
                                duration_ms=5000.0, **a))]
    if not lost_start:
        lines.append((1 * _S, rt_at_us(1 * _S, "request.start", "frontend", **a)))
    log = directory / "frontend.jsonl"
    log.write_text("".join(line + "\n" for _, line in sorted(lines)))
    return log


def _analyze(paths: list[str]) -> dict[str, Any]:
    return report_json(analyze_read(read_partials(expand_inputs(paths))))


def test_a_request_end_alone_starts_by_its_duration(tmp_path: Path) -> None:
    doc = _analyze([str(_logs(tmp_path))])
    assert doc["summary"]["duplicate_in_flight"] == 1
    (finding,) = doc["findings"]
    assert finding["kind"] == "duplicate_in_flight" and finding["request_id"] == "dup-1"
    assert finding["time"] == "2026-11-29T10:00:01.000000Z"  # a1's start, dated back


def test_the_follower_dates_it_back_too(tmp_path: Path) -> None:
    log = _logs(tmp_path)
    follower = Follower([str(log)], FollowSettings(from_start=True))
    try:
        found, _ = follower.poll()
        found += follower.finish()
    finally:
        follower.close()
    assert [(f["kind"], f["request_id"]) for f in found] == [("duplicate_in_flight", "dup-1")]


def _started(directory: Path) -> list[str]:
    """Id ``r`` held over [0.5 s, 1.5 s], then by span c over [2 s, 4 s], c's end stating
    9 s (more than its lines span: no overlap), c's start line in the rotated part."""
    x = {"request_id": "r", "trace_id": "d" * 32, "span_id": "d" * 16}
    c = {"request_id": "r", "trace_id": "c" * 32, "span_id": "c" * 16}
    (directory / "frontend.jsonl.1").write_text("".join(line + "\n" for line in (
        rt_at_us(_S // 2, "request.start", "frontend", **x),
        rt_at_us(3 * _S // 2, "request.end", "frontend", status=200, outcome="ok",
                 duration_ms=1000.0, **x),
        rt_at_us(2 * _S, "request.start", "frontend", **c))))
    (directory / "frontend.jsonl").write_text(rt_at_us(
        4 * _S, "request.end", "frontend", status=200, outcome="ok", duration_ms=9000.0,
        **c) + "\n")
    return [str(directory)]


def test_a_request_with_its_start_line_starts_there(tmp_path: Path) -> None:
    # Read whole, or cut from its end by a rotation: its start line places it.
    doc = _analyze(_started(tmp_path))
    assert doc["summary"]["errors"] == 0 and doc["findings"] == []
    # Followed, its end read in a poll after its start's.
    live = tmp_path / "live"
    live.mkdir()
    written = [(0.0, "frontend.jsonl", line) for name in ("frontend.jsonl.1", "frontend.jsonl")
               for line in (tmp_path / name).read_text().splitlines()]
    assert follow_as_written(live, written) == []
    log = tmp_path / "frontend.jsonl"
    log.write_text((tmp_path / "frontend.jsonl.1").read_text() + log.read_text())
    (tmp_path / "frontend.jsonl.1").unlink()
    assert _analyze([str(log)])["findings"] == []


@pytest.mark.extra("dask")
def test_the_dask_engine_reports_the_same(client: Any, tmp_path: Path) -> None:
    from ridtrace.forensics.dask_engine.engine import analyze_dask

    paths = []
    for lost, name in ((True, "lost"), (False, "whole-1"), (None, "rotated")):
        folder = tmp_path / name
        folder.mkdir()
        paths += _started(folder) if lost is None else [
            str(_logs(folder, lost_start=lost, rid=name))]
    want = _analyze(paths)
    # Blocks of a line or so: each span is cut from its start line.
    assert report_json(analyze_dask(client, paths, block_bytes=512)) == want
    assert sorted(f["request_id"] for f in want["findings"]) == ["lost", "whole-1"]
