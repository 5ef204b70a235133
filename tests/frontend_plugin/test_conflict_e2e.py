"""A worker holding an id refuses a duplicate with 409; the dispatcher retries elsewhere."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import orjson
from loguru import logger

from ridtrace.frontend_plugin import Dispatcher, FrontendSettings, WorkRequest
from tests.frontend_plugin.conftest import start_stack

HELD_ID = "held-id-0001"


def _work(prompt: str) -> WorkRequest:
    return WorkRequest(request_id=HELD_ID, x_request_id="client-x", endpoint="generate",
                       model="echo", prompt=prompt, max_tokens=50)


def test_conflict_retries_on_another_worker_without_marking_down(tmp_path: Path) -> None:
    with start_stack(tmp_path, workers=[["--gate"], []]) as stack:
        holder, other = stack.workers
        with httpx.Client(timeout=30) as client, client.stream(
            "POST", holder.url + "/v1/work", content=_work("first caller").to_json()
        ) as held:
            # Headers arrive only after the worker registered the id; the gate holds
            # the first token, so the id is in flight on `holder` from here on.
            assert held.status_code == 200
            duplicate = client.post(holder.url + "/v1/work", content=_work("dup").to_json())
            assert duplicate.status_code == 409
            # Both answers name the id the worker's lines carry: the envelope's (they
            # named the id the middleware minted, which no line or span carried).
            assert held.headers["x-server-request-id"] == HELD_ID
            assert duplicate.headers["x-server-request-id"] == HELD_ID
            assert duplicate.json()["error"]["type"] == "conflict"
            assert {"param", "code"} <= set(duplicate.json()["error"])  # OpenAI's shape

            records: list[dict[str, Any]] = []
            sink = logger.add(lambda m: records.append(dict(m.record["extra"])), level="DEBUG")
            try:
                text, worker, attempts, holder_up = asyncio.run(_dispatch(holder.url, other.url))
            finally:
                logger.remove(sink)
            assert worker == other.url and attempts == 2
            assert holder_up  # a Conflict never marks a worker down
            assert "echo: second caller" in text
            retries = [r for r in records if r.get("event") == "dispatch.retry"]
            assert retries == [r for r in retries if r["reason"] == "conflict"]
            assert len(retries) == 1 and retries[0]["marked_down"] is False

            client.post(holder.url + "/debug/gate/open").raise_for_status()
            lines = [orjson.loads(x) for x in held.read().splitlines()]
            # The first caller is untouched: its own tokens, then done.
            assert "".join(x.get("text", "") for x in lines) == "echo: first caller"
            assert lines[-1]["done"] is True
        assert httpx.get(holder.url + "/health").json()["status"] == "ok"
        refused = [x for x in holder.lines() if x.get("event") == "worker.refused"]
        assert len(refused) == 2 and all(x["status"] == 409 for x in refused)
        assert all(x["request_id"] == HELD_ID for x in refused)


async def _dispatch(holder: str, other: str) -> tuple[str, str, int, bool]:
    dispatcher = Dispatcher(FrontendSettings(workers=(holder, other)))
    try:
        stream = await dispatcher.open(_work("second caller"))
        parts = [str(stream.first.get("text", ""))]
        while (message := await stream.next_message(5)) is not None:
            parts.append(str(message.get("text", "")))
        await stream.aclose()
        return "".join(parts), stream.worker, stream.attempts, dispatcher.pool.is_up(holder)
    finally:
        await dispatcher.aclose()


def test_a_conflict_after_a_dead_worker_reports_the_dead_worker(tmp_path: Path) -> None:
    # The last refusal named the failure: a down worker and then a Conflict told the
    # caller "every worker tried already had this request id in flight" (503), which
    # was false, and hid that a worker was unreachable (502 worker unavailable).
    from ridtrace.frontend_plugin.dispatch import DispatchError
    from ridtrace.frontend_plugin.failures import WORKER_UNAVAILABLE
    from tests.support.servers import free_port

    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with start_stack(tmp_path, workers=[["--gate"]]) as stack:
        holder = stack.workers[0]
        with httpx.Client(timeout=30) as client, client.stream(
            "POST", holder.url + "/v1/work", content=_work("first caller").to_json()
        ) as held:
            assert held.status_code == 200  # the id is in flight on `holder`

            async def dispatch() -> DispatchError:
                dispatcher = Dispatcher(FrontendSettings(workers=(dead, holder.url)))
                try:
                    await dispatcher.open(_work("second caller"))
                except DispatchError as exc:
                    return exc
                finally:
                    await dispatcher.aclose()
                raise AssertionError("dispatched")

            records: list[dict[str, Any]] = []
            sink = logger.add(lambda m: records.append(dict(m.record["extra"])), level="DEBUG")
            try:
                error = asyncio.run(dispatch())
            finally:
                logger.remove(sink)
            client.post(holder.url + "/debug/gate/open").raise_for_status()
        assert (error.status, str(error), error.reason) == (502, WORKER_UNAVAILABLE, "connect")
        assert error.attempts == 2 and error.detail.startswith(f"worker {dead}: ")
        retries = [(r["reason"], r["marked_down"]) for r in records
                   if r.get("event") == "dispatch.retry"]
        assert retries == [("connect", True), ("conflict", False)]
