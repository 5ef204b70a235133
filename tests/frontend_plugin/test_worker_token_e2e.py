"""The shared frontend↔worker token, on and off, with real processes."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import orjson

from tests.frontend_plugin.conftest import start_stack

TOKEN = "wt-5e1f0c2d9a"
CHAT = {"model": "echo", "messages": [{"role": "user", "content": "token check"}]}
ENVELOPE = orjson.dumps({"request_id": "direct-1", "x_request_id": None, "endpoint": "generate",
                         "model": "echo", "prompt": "hello", "max_tokens": 4})


def test_token_on_both_sides_serves_and_workers_refuse_work_without_it(tmp_path: Path) -> None:
    env = {"RIDTRACE_WORKER_TOKEN": TOKEN}
    with start_stack(tmp_path, workers=[["--debug-endpoints"]], env=env) as stack:
        reply = httpx.post(stack.url + "/v1/chat/completions", json=CHAT, timeout=30)
        assert reply.status_code == 200 and "token check" in reply.text
        worker = stack.workers[0].url
        with httpx.Client(base_url=worker, timeout=30) as client:
            refused = client.post("/v1/work", content=ENVELOPE)
            wrong = client.post("/v1/work", content=ENVELOPE,
                                headers={"authorization": "Bearer not-the-token"})
            right = client.post("/v1/work", content=ENVELOPE,
                                headers={"authorization": f"Bearer {TOKEN}"})
            api_key_header = client.post("/v1/work", content=ENVELOPE, headers={"x-api-key": TOKEN})
            health = client.get("/health")
            debug_refused = client.get("/debug/inflight")
            debug = client.get("/debug/inflight", headers={"authorization": f"Bearer {TOKEN}"})
    assert refused.status_code == wrong.status_code == api_key_header.status_code == 401
    # Named as its caller knows it: a worker takes no API key.
    assert [r.json()["error"]["message"].split(":")[0] for r in (refused, wrong)] == [
        "missing worker token", "invalid worker token"]
    assert right.status_code == 200 and b'"done":true' in right.content
    assert health.status_code == 200
    assert debug_refused.status_code == 401  # turned on, still behind the token
    assert debug.status_code == 200 and debug.json()["policy"] == "safe"
    refusals = [x for x in stack.workers[0].lines() if x.get("event") == "worker.refused"]
    assert [x["outcome"] for x in refusals] == ["unauthorized"] * 4
    assert TOKEN.encode() not in b"".join(p.read_bytes() for p in tmp_path.glob("*.jsonl"))


def test_token_off_workers_take_work_without_one(tmp_path: Path) -> None:
    with start_stack(tmp_path, workers=[[]]) as stack:
        direct = httpx.post(stack.workers[0].url + "/v1/work", content=ENVELOPE, timeout=30)
        reply = httpx.post(stack.url + "/v1/chat/completions", json=CHAT, timeout=30)
    assert direct.status_code == 200 and reply.status_code == 200


def test_a_wrong_token_fails_the_request_clearly_and_is_not_retried_elsewhere(
    tmp_path: Path,
) -> None:
    worker = ["--worker-token", TOKEN]
    with start_stack(
        tmp_path, workers=[worker, worker], frontend=["--worker-token", "stale-token"],
    ) as stack:
        reply = httpx.post(stack.url + "/v1/chat/completions", json=CHAT, timeout=30)
        snapshot = stack.inflight()
    assert reply.status_code == 502
    assert "worker token" in reply.json()["error"]["message"]
    assert "127.0.0.1" not in reply.text  # the caller is not shown the topology
    (end,) = [x for x in stack.frontend.lines()
              if x.get("event") == "request.end" and x["path"] == "/v1/chat/completions"]
    assert end["attempts"] == 1 and end["status"] == 502
    (refusal,) = [x for x in stack.frontend.lines() if x.get("event") == "dispatch.retry"]
    assert refusal["reason"] == "worker_unauthorized" and refusal["marked_down"] is True
    refused_by = [w for w in stack.workers
                  if any(x.get("event") == "worker.refused" for x in w.lines())]
    assert len(refused_by) == 1  # one attempt: a 401 is not a Conflict to retry elsewhere
    down = [w["url"] for w in snapshot["workers"] if not w["up"]]  # type: ignore[attr-defined]
    assert down == [refused_by[0].url]


def test_a_worker_left_on_another_token_costs_no_caller_after_it_is_known(
    tmp_path: Path,
) -> None:
    # A token rotated worker by worker: one worker already on the new token refuses the
    # frontend's. Once it was marked down, each cooldown's probe of it (first in a
    # request's order) was a 502 to that caller while the other worker was free.
    workers = [["--worker-token", TOKEN], ["--worker-token", "wt-rotated-7a41"]]
    env = {"RIDTRACE_FRONTEND_DOWN_COOLDOWN": "0.2"}
    with start_stack(tmp_path, workers=workers, frontend=["--worker-token", TOKEN],
                     env=env) as stack, httpx.Client(timeout=30) as client:
        rotated = stack.workers[1]
        deadline = time.monotonic() + 60

        def refusals() -> int:
            return sum(x.get("event") == "worker.refused" for x in rotated.lines())

        def requests_until(count: int) -> list[int]:
            statuses = []
            while refusals() < count:
                assert time.monotonic() < deadline, statuses[-20:]
                statuses.append(
                    client.post(stack.url + "/v1/chat/completions", json=CHAT).status_code)
            return statuses

        first = requests_until(1)  # the request that finds it out fails (documented)
        probed = requests_until(7)  # six probes after six cooldowns
    assert first[-1] == 502 and set(first[:-1]) <= {200}
    assert set(probed) == {200}, probed
    retries = [x for x in stack.frontend.lines() if x.get("event") == "dispatch.retry"]
    assert len(retries) >= 7 and {x["reason"] for x in retries} == {"worker_unauthorized"}
