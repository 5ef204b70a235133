"""`ridtrace trace` shows a Dynamo request answered with a 5xx as failed.

At its default INFO level Dynamo logs a request's end only as "http response sent",
with its status and no outcome (its "request completed" line, which says one, is
DEBUG). trace showed `-` for a 500, where `export jaeger` flags the same span an error.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main


def _sent(status: str, n: int) -> str:
    return json.dumps({
        "time": f"2026-10-02T14:00:0{n}.000000Z", "level": "INFO",
        "target": "dynamo_llm::http::service::service_v2", "message": "http response sent",
        "latency_ms": "150", "status": status, "method": "POST",
        "request_id": f"5f0e0c3b-0000-4000-8000-00000000000{n}", "span_id": f"a{n}" * 8,
        "span_name": "http-request", "trace_id": f"{n}" * 32, "uri": "/v1/chat/completions",
        "version": "HTTP/1.1"})


@pytest.mark.parametrize(("status", "outcome"), [("500", "error"), ("503", "error"),
                                                 ("200", None), ("404", None)])
def test_a_dynamo_answer_s_status_tells_a_failure_where_no_outcome_is_logged(
    tmp_path: Path, status: str, outcome: str | None,
) -> None:
    log = tmp_path / "frontend.jsonl"
    log.write_text(_sent(status, 1) + "\n")
    runner = CliRunner()

    got = runner.invoke(main, ["trace", "5f0e0c3b-0000-4000-8000-000000000001", str(log),
                               "--format", "json"])
    text = runner.invoke(main, ["trace", "5f0e0c3b-0000-4000-8000-000000000001", str(log)],
                         env={"COLUMNS": "100"})

    assert got.exit_code == 0, got.output
    request = json.loads(got.stdout)["requests"][0]
    assert (request["status"], request["outcome"]) == (status, outcome)
    assert request["spans"][0]["outcome"] == outcome
    assert f"/v1/chat/completions  {status}  {outcome or '-'}  150.0 ms" in text.stdout
    jaeger = tmp_path / "traces.json"
    assert runner.invoke(main, ["export", "jaeger", str(log), "-o", str(jaeger)]).exit_code == 0
    tags = {t["key"]: t["value"] for t in
            json.loads(jaeger.read_text())["data"][0]["spans"][0]["tags"]}
    assert tags.get("error", False) == (outcome == "error")
