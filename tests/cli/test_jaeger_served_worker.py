"""`export jaeger`'s `worker` tag names the worker that served a request, not one that
refused it with Conflict before the retry."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from ridtrace.frontend_plugin import WorkRequest
from tests.frontend_plugin.conftest import start_stack
from tests.support.inprocess_cli import run_in_process

HELD_ID = "held-by-worker0"
CHAT = {"model": "echo", "stream": False, "max_tokens": 8,
        "messages": [{"role": "user", "content": "second caller"}]}


def test_the_worker_tag_is_the_worker_that_served_after_a_conflict(tmp_path: Path) -> None:
    # The span took the first `worker` among its lines: the dispatch.retry naming the
    # worker that refused the id, so Jaeger said the refusing worker had served it.
    held = WorkRequest(request_id=HELD_ID, x_request_id="first", endpoint="generate",
                       model="echo", prompt="first caller", max_tokens=8)
    logs = tmp_path / "logs"
    with start_stack(logs, workers=[["--gate"], []], frontend=["--id-policy", "legacy"]) as stack:
        holder, other = stack.workers
        with httpx.Client(timeout=30) as client, client.stream(
            "POST", holder.url + "/v1/work", content=held.to_json()
        ) as first:
            # Headers arrive once the worker holds the id; the gate holds its first token.
            assert first.status_code == 200
            # Legacy policy: the client's id is the request id; the frontend's first pick
            # is `holder`, which refuses it, and the retry goes to `other`.
            answer = client.post(stack.url + "/v1/chat/completions", json=CHAT,
                                 headers={"x-request-id": HELD_ID})
            assert answer.status_code == 200
            client.post(holder.url + "/debug/gate/open").raise_for_status()
            first.read()
        ends = stack.frontend.wait_for_lines(
            lambda line: line.get("event") == "request.end" and line.get("path")
            == "/v1/chat/completions", 1)
        stack.frontend.wait_for_lines(lambda line: line.get("event") == "dispatch.retry", 1)
    assert ends[0]["worker"] == other.url
    out = tmp_path / "traces.json"
    code, _, stderr = run_in_process(["export", "jaeger", str(logs), "-o", str(out)])
    assert code == 0, stderr
    spans = [s for t in json.loads(out.read_text())["data"] for s in t["spans"]]
    front = [s for s in spans if s["operationName"] == "POST /v1/chat/completions"]
    assert len(front) == 1
    tags = {t["key"]: t["value"] for t in front[0]["tags"]}
    assert tags["worker"] == other.url
