"""analyze on small hand-made logs whose right answer is worked out by hand, both engines."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import analyze_json
from tests.forensics.helpers import rt, rt_request, ts


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _work(span: str, parent: str, trace: str, rid: str, start: float, end: float,
          fp_in: str, fp_out: str) -> list[str]:
    ctx = {"request_id": rid, "trace_id": trace, "span_id": span, "parent_span_id": parent,
           "service": "worker-8101"}
    return [rt("worker.start", time=ts(start), fp_in=fp_in, **ctx),
            rt("worker.end", time=ts(end), outcome="ok", fp_out=fp_out, **ctx)]


@pytest.mark.parametrize("engine", ["pandas", "dask"])
def test_one_span_id_in_two_traces_is_two_requests(tmp_path: Path, engine: str) -> None:
    # Two callers that logged the same span id in different traces held id 7 at once.
    # On span ids alone they were one caller: 1 request, no finding, exit 0.
    ta, tb = "a" * 32, "b" * 32
    _write(tmp_path / "frontend.jsonl", [
        *rt_request("00000000000000f1", "7", 0.0, 1.0, trace=ta, fp_in="ia", fp_out="oa"),
        *rt_request("00000000000000f1", "7", 0.5, 1.5, trace=tb, fp_in="ib", fp_out="ob"),
    ])
    _write(tmp_path / "worker-8101.jsonl", [
        *_work("00000000000000w1", "00000000000000f1", ta, "7", 0.1, 0.9, "ia", "oa"),
        *_work("00000000000000w2", "00000000000000f1", tb, "7", 0.6, 1.4, "ib", "ob"),
    ])
    code, doc = analyze_json(str(tmp_path), "--engine", engine)
    assert code == 1
    summary = doc["summary"]
    assert (summary["requests"], summary["spans"]) == (2, 4)
    assert (summary["duplicate_in_flight"], summary["errors"]) == (1, 1)
    [found] = doc["findings"]
    assert found["kind"] == "duplicate_in_flight"
    assert f"(trace {ta})" in found["detail"] and f"(trace {tb})" in found["detail"]
