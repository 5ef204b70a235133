"""`ridtrace trace` on a worker's Conflict: the refused caller never held the id.

A client of `/v1/work` from outside the frontend's logs (another gateway) sent an id a
worker held; the worker refused it (409, `worker.refused`, outcome conflict). `analyze`
finds no duplicate in flight, as docs/cli.md says; `trace` counted the refused caller as
a holder: "#1 #2 held request … at the same time", each marked duplicate_in_flight.
"""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.frontend_plugin.conftest import start_stack


def test_trace_and_analyze_agree_that_a_refused_caller_held_no_id(tmp_path: Path) -> None:
    with start_stack(tmp_path / "stack", workers=[["--gate"]]) as stack, \
            ThreadPoolExecutor(1) as pool:
        (worker,) = stack.workers
        body = {"model": "echo", "stream": True, "max_tokens": 5,
                "messages": [{"role": "user", "content": "held"}]}
        # The gate holds the first token: the frontend answers once the gate opens.
        held = pool.submit(httpx.post, stack.url + "/v1/chat/completions", json=body,
                           timeout=30)
        (start,) = worker.wait_for_lines(lambda x: x.get("event") == "worker.start", 1)
        request_id = str(start["request_id"])
        outside = httpx.post(worker.url + "/v1/work", json={
            "request_id": request_id, "endpoint": "chat_completions", "model": "echo",
            "prompt": "from another gateway", "max_tokens": 2,
        }, headers={"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
            timeout=30)
        assert outside.status_code == 409
        stack.open_gates()
        answer = held.result()
        assert answer.status_code == 200 and "held" in answer.text
        stack.frontend.wait_for_event(request_id, "request.end")
        worker.wait_for_lines(lambda x: x.get("event") == "worker.refused", 1)
        logs = tmp_path / "logs"
        logs.mkdir()
        for proc, name in ((stack.frontend, "frontend"), (worker, "worker")):
            shutil.copy(proc.log, logs / f"{name}.jsonl")

    analyzed = CliRunner().invoke(main, ["analyze", str(logs), "--format", "json"])
    assert analyzed.exit_code == 0, analyzed.output
    assert json.loads(analyzed.output)["summary"]["duplicate_in_flight"] == 0
    traced = CliRunner().invoke(main, ["trace", request_id, str(logs), "--format", "json"])
    assert traced.exit_code == 0, traced.output
    requests = json.loads(traced.output)["requests"]
    assert requests and all(r["findings"] == [] and r["overlaps"] == [] for r in requests), requests
    text = CliRunner().invoke(main, ["trace", request_id, str(logs)], env={"COLUMNS": "140"})
    assert "at the same time" not in text.output, text.output
