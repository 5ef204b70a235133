"""analyze on small hand-made logs whose right answer is worked out by hand, both engines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.cli.helpers import analyze_json
from tests.forensics.helpers import rt, rt_request, ts
from tests.support.extras import ENGINES


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _work(span: str, parent: str, trace: str, rid: str, start: float, end: float,
          fp_in: str, fp_out: str) -> list[str]:
    ctx = {"request_id": rid, "trace_id": trace, "span_id": span, "parent_span_id": parent,
           "service": "worker-8101"}
    return [rt("worker.start", time=ts(start), fp_in=fp_in, **ctx),
            rt("worker.end", time=ts(end), outcome="ok", fp_out=fp_out, **ctx)]


@pytest.mark.parametrize("engine", ENGINES)
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


def _crossed_incident(directory: Path, *, worker_skew: float) -> None:
    """Callers a1 and b2 held id 7 at once (100 s to 102 s); b2 failed Unlinked and a1
    was delivered b2's output. The worker's clock is `worker_skew` s off the frontend's."""
    trace_a, trace_b = f"{'a1':0>32}", f"{'b2':0>32}"
    directory.mkdir()
    _write(directory / "frontend.jsonl", [
        *rt_request("00000000000000a1", "7", 100.0, 102.0, trace=trace_a, fp_in="ia",
                    fp_out="ob"),
        *rt_request("00000000000000b2", "7", 100.5, 101.0, trace=trace_b, fp_in="ib",
                    error="Unlinked response; response task was dropped or cancelled"),
    ])
    _write(directory / "worker-8101.jsonl", [
        *_work("000000000000w0a1", "00000000000000a1", trace_a, "7", 100.1 + worker_skew,
               101.8 + worker_skew, "ia", "oa"),
        *_work("000000000000w0b2", "00000000000000b2", trace_b, "7", 100.6 + worker_skew,
               100.9 + worker_skew, "ib", "ob"),
    ])


@pytest.mark.parametrize("engine", ENGINES)
def test_since_keeps_the_spans_of_a_worker_whose_clock_runs_behind(
    tmp_path: Path, engine: str
) -> None:
    # The worker's clock is 5 s behind: by its own stamps its spans end before --since,
    # one second before the incident. They were dropped from the window, and with them
    # the crossed stream and the lost output they prove: a window around an incident
    # answered less than the whole read.
    _crossed_incident(tmp_path / "logs", worker_skew=-5.0)
    _, whole = analyze_json(str(tmp_path / "logs"), "--engine", engine)
    code, windowed = analyze_json(str(tmp_path / "logs"), "--engine", engine,
                                  "--since", ts(99.0))
    assert code == 1
    kinds = sorted(f["kind"] for f in windowed["findings"])
    assert kinds == ["crossed_stream", "duplicate_in_flight", "unlinked"]
    assert windowed["findings"] == whole["findings"]
    assert windowed["summary"]["spans"] == 4
    assert windowed["summary"]["clock_offsets_ms"] == whole["summary"]["clock_offsets_ms"]


@pytest.mark.parametrize("engine", ENGINES)
def test_each_deprecated_header_a_request_sent_is_counted(tmp_path: Path, engine: str) -> None:
    # The middleware's WARN (once per header per process) comes before request.start and
    # names one header. The first request's deprecated headers were taken from the
    # first WARN: `request-id` was counted for one request of two.
    both = "x-dynamo-request-id,request-id"
    first = {"request_id": "r1", "trace_id": "1" * 32, "span_id": "1" * 16}
    _write(tmp_path / "frontend.jsonl", [
        rt("deprecated_header", level="WARN", time=ts(0), header="x-dynamo-request-id", **first),
        rt("deprecated_header", level="WARN", time=ts(0), header="request-id", **first),
        *rt_request("1" * 16, "r1", 0.001, 1.0, trace="1" * 32, deprecated_headers=both),
        *rt_request("2" * 16, "r2", 2.0, 3.0, trace="2" * 32, deprecated_headers=both),
    ])
    code, doc = analyze_json(str(tmp_path), "--engine", engine)
    assert code == 0
    assert [f["detail"] for f in doc["findings"]] == [f"sent deprecated header {both}"] * 2
    result = CliRunner().invoke(main, ["audit", str(tmp_path), "--format", "json", "-q",
                                       "--engine", engine])
    rows = {row["header"]: row["requests"] for row in json.loads(result.stdout)["rows"]}
    assert rows == {"x-dynamo-request-id": 2, "request-id": 2}
