"""A Dynamo worker span whose parent is the frontend's unlogged `generate` span is a
part of the request its trace's `http-request` span is.

At DEBUG with span events off (Dynamo's default), the route-less `generate` span logs no
line when it succeeds, and the worker's `handle_payload` names it as `parent_id`: the
worker span was a request of its own ("no caller in logs"), each request counted twice,
and the worker file's clock (200 ms ahead here) was never corrected.
(`data/unlogged-generate-parent`: two generate requests one after the other, legacy id 7.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.support.extras import ENGINE_ARGS

_LOGS = Path(__file__).parent / "data" / "unlogged-generate-parent"


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, [*args])
    return result.exit_code, result.stdout


@pytest.mark.parametrize("engine", ENGINE_ARGS)
def test_the_worker_joins_its_request_and_its_clock_is_corrected(engine: list[str]) -> None:
    code, out = _run("analyze", str(_LOGS), "--format", "json", "-q", *engine)
    summary = json.loads(out)["summary"]
    assert (code, summary["requests"]) == (0, 2)
    assert summary["clock_offsets_ms"] == {str(_LOGS / "worker.jsonl"): -200.0}


def test_trace_and_jaeger_show_the_worker_under_its_request(tmp_path: Path) -> None:
    code, out = _run("trace", "7", str(_LOGS), "--format", "json")
    requests = json.loads(out)["requests"]
    assert code == 0 and len(requests) == 2
    assert [r["verdict"] for r in requests] == ["no fingerprints"] * 2
    # Each request's worker span under it, on the frontend's clock (it logged 200 ms late).
    assert [[(s["side"], s["start_ms"]) for s in r["spans"]] for r in requests] == [
        [("frontend", 0.0), ("worker-0", 10.0)], [("frontend", 0.0), ("worker-0", 10.0)]]
    jaeger = tmp_path / "jaeger.json"
    code, _ = _run("export", "jaeger", str(_LOGS), "-o", str(jaeger), "-q")
    for trace in json.loads(jaeger.read_text())["data"]:
        ids = {span["spanID"] for span in trace["spans"]}
        refs = [ref["spanID"] for span in trace["spans"] for ref in span["references"]]
        assert len(trace["spans"]) == 2 and len(refs) == 1 and set(refs) <= ids
