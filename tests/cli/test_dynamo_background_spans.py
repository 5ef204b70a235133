"""Dynamo with ``DYN_LOGGING_SPAN_EVENTS=1`` logs SPAN_FIRST_ENTRY/SPAN_CLOSED for every
span, background ones too (the lease keepalive, discovery watches): they name a span_id
and a trace_id of their own but are no request. Each was read as a request: 20 of them
turned 2 requests into 22 in `analyze`, added a trace each to `export jaeger`, and a log
of nothing but them was not flagged "no request found". Only request spans (the
http-request span, the spans nested in a request, a worker's handle_payload) count.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.forensics.live.follow import Follower, FollowSettings
from tests.cli.helpers import analyze_json
from tests.forensics.helpers import ts
from tests.support.extras import require_extra


def _line(at: float, message: str, span: str, trace: str, **fields: Any) -> str:
    return json.dumps({"time": ts(at), "level": "INFO", "target": "request_span",
                       "message": message, "span_id": span, "trace_id": trace, **fields})


def _background(n: int, at: float) -> list[str]:
    """A lease keepalive span: entered, then closed 5 ms later."""
    trace, span = f"{n:032x}", f"{n:016x}"
    fields = {"span_name": "keep_alive", "lease_id": "7587889211730189659"}
    return [_line(at, "SPAN_FIRST_ENTRY", span, trace, **fields),
            _line(at + 0.005, "SPAN_CLOSED", span, trace, **{"time.duration_us": 5000},
                  **fields)]


def _request(n: int, start: float, end: float) -> list[str]:
    """A request: http-request, the generate step nested in it, the worker's span."""
    trace, http, gen, work = f"f{n}" * 16, f"a{n}" * 8, f"b{n}" * 8, f"c{n}" * 8
    front = {"span_name": "http-request", "method": "POST", "uri": "/v1/chat/completions",
             "x_request_id": f"cli-{n}"}
    step = {"span_name": "generate", "parent_id": http, "request_id": f"r-{n}"}
    worker = {"span_name": "handle_payload", "parent_id": gen, "request_id": f"r-{n}"}
    return [_line(start, "SPAN_FIRST_ENTRY", http, trace, **front),
            _line(start + 0.001, "SPAN_FIRST_ENTRY", gen, trace, **step),
            _line(start + 0.01, "request received", work, trace, **worker),
            _line(end - 0.02, "request completed", work, trace, **worker),
            _line(end - 0.01, "SPAN_CLOSED", gen, trace, **step),
            _line(end, "http response sent", http, trace, status="200",
                  latency_ms=str(round((end - start) * 1000)), **front)]


def _lines() -> list[str]:
    lines = [*_request(1, 0.0, 1.0), *_request(2, 2.0, 3.0)]
    lines += [line for n in range(20) for line in _background(100 + n, 0.1 * n)]
    return sorted(lines, key=lambda line: json.loads(line)["time"])


def _log(tmp_path: Path, lines: list[str]) -> Path:
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(lines) + "\n")
    return log


def test_analyze_counts_request_spans_only(tmp_path: Path) -> None:
    code, doc = analyze_json(str(_log(tmp_path, _lines())))

    assert code == 0, doc
    assert doc["summary"]["requests"] == 2


def test_a_log_of_background_spans_only_has_no_request(tmp_path: Path) -> None:
    only = [line for n in range(3) for line in _background(100 + n, n)]
    code, doc = analyze_json(str(_log(tmp_path, only)))

    assert code == 3, doc
    assert doc["summary"]["requests"] == 0
    assert doc["summary"]["incomplete"] is True


def test_export_jaeger_has_no_trace_of_a_background_span(tmp_path: Path) -> None:
    out = tmp_path / "traces.json"
    result = CliRunner().invoke(main, ["export", "jaeger", str(_log(tmp_path, _lines())),
                                       "-o", str(out)])

    assert result.exit_code == 0, result.output
    traces = json.loads(out.read_text())["data"]
    assert sorted(t["traceID"] for t in traces) == ["f1" * 16, "f2" * 16]


def test_the_follower_counts_request_spans_only(tmp_path: Path) -> None:
    folder = tmp_path / "live"
    folder.mkdir()
    (folder / "frontend.jsonl").touch()
    follower = Follower([str(folder)], FollowSettings(settle_s=0))
    follower.start()
    try:
        with (folder / "frontend.jsonl").open("a") as handle:
            handle.write("\n".join(_lines()) + "\n")
        follower.poll()
        follower.finish()
        summary = follower.summary()
    finally:
        follower.close()

    assert (summary["requests"], summary["spans"]) == (2, 6)


@pytest.mark.extra("dask")
def test_the_dask_engine_counts_request_spans_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    require_extra("dask")
    log = _log(tmp_path, _lines())
    from ridtrace.forensics.dask_engine import engine as dask_engine

    monkeypatch.setitem(dask_engine.LOCAL_CLUSTER_OPTIONS, "processes", False)
    result = CliRunner().invoke(main, ["analyze", str(log), "--format", "json", "-q",
                                       "--engine", "dask"])

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["summary"]["requests"] == 2
