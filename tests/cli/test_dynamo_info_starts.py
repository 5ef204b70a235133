"""A Dynamo frontend span at INFO level logs no start line: its `http response sent`
states when it began (`latency_ms`, whole milliseconds), and its first line is often the
deprecated-header WARN written as the request began.

The views took the start from the answer only while the span's first line came after
it: a WARN at that start, or a fraction of a millisecond before it (`latency_ms` rounds
down), made the span "start not in logs" in `trace` and gave it Jaeger's "no start
logged … nor a duration on its answer" warning, saying lines were lost when none were.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import jaeger_spans, ts

_BEGAN = 60.0  # s after the helpers' T0: where latency_ms dates the request back to
_LATENCY_MS = 300


def _line(at: float, message: str, **fields: object) -> str:
    return json.dumps({
        "time": ts(at), "level": "INFO", "target": "dynamo_llm::http::service::service_v2",
        "message": message, "method": "POST", "uri": "/v1/chat/completions",
        "request_id": "r-1", "span_id": "a1" * 8, "span_name": "http-request",
        "trace_id": "a" * 32, **fields})


@pytest.mark.parametrize("warned_ms", [0.0, -0.4, 100.0], ids=["at", "before", "after"])
def test_a_warn_at_the_start_latency_gives_is_no_lost_start(
    tmp_path: Path, warned_ms: float
) -> None:
    (tmp_path / "frontend.jsonl").write_text("\n".join([
        _line(_BEGAN + warned_ms / 1000, "ignoring deprecated client request id header",
              level="WARN", header="x-dynamo-request-id"),
        _line(_BEGAN + _LATENCY_MS / 1000, "http response sent",
              latency_ms=str(_LATENCY_MS), status="200"),
    ]) + "\n")
    runner = CliRunner()
    shown = runner.invoke(main, ["trace", "r-1", str(tmp_path), "-q"])
    assert shown.exit_code == 0, shown.output
    assert "start not in logs" not in shown.output
    span_ms = _LATENCY_MS - min(warned_ms, 0.0)  # from the WARN when it came first
    assert f"{span_ms:.1f} ms" in shown.output
    out = tmp_path / "jaeger.json"
    exported = runner.invoke(main, ["export", "jaeger", str(tmp_path), "-o", str(out), "-q"])
    assert exported.exit_code == 0, exported.output
    [span] = jaeger_spans(json.loads(out.read_text())).values()
    assert not span.get("warnings"), span["warnings"]
    assert abs(span["duration"] - span_ms * 1000) <= 1  # µs, as the times are rounded
