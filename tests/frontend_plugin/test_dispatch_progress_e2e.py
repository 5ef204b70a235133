"""A caller that leaves while its request is being dispatched: what request.end says.

The worker already holds the request (it logs worker.start, then worker.end cancelled),
so the frontend's request.end must name that worker and count the attempts made,
retries included; it said ``attempts: 0`` and no worker, as if nothing had been sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

import httpx

from tests.frontend_plugin.conftest import Proc, Stack, start_stack


def _held_by(worker: Proc, count: int) -> None:
    """Poll the worker until it holds ``count`` requests at its gate (a condition)."""
    deadline = time.monotonic() + 30
    while httpx.get(worker.url + "/health", timeout=5).json()["inflight"] != count:
        assert time.monotonic() < deadline, f"{worker.url} never held {count}"
        time.sleep(0.02)


def _end_of(stack: Stack, x_request_id: str) -> dict[str, object]:
    deadline = time.monotonic() + 30
    while True:
        starts = [line for line in stack.frontend.lines()
                  if line.get("event") == "request.start"
                  and line.get("x_request_id") == x_request_id]
        if starts:
            return stack.frontend.wait_for_event(str(starts[0]["request_id"]), "request.end")
        assert time.monotonic() < deadline, f"no request.start for {x_request_id}"
        time.sleep(0.02)


async def _leave_while_held(stack: Stack, holder: Proc, x_request_id: str, *,
                            stream: bool, held: int) -> None:
    body = {"model": "echo", "stream": stream,
            "messages": [{"role": "user", "content": x_request_id}]}
    async with httpx.AsyncClient(timeout=30) as client:
        call = asyncio.ensure_future(client.post(
            stack.url + "/v1/chat/completions", json=body,
            headers={"x-request-id": x_request_id},
        ))
        await asyncio.to_thread(_held_by, holder, held)
        call.cancel()  # the client goes away: its connection closes
        with contextlib.suppress(asyncio.CancelledError):
            await call


def test_a_caller_leaving_mid_dispatch_is_logged_with_its_worker_and_attempts(
    tmp_path: Path,
) -> None:
    with start_stack(tmp_path, workers=[[], ["--gate"]]) as stack:
        dead, gated = stack.workers
        os.kill(dead.process.pid, signal.SIGKILL)  # refused connections from now on
        dead.process.wait()
        # Round robin starts at the first worker: the dead one, then the gated one.
        asyncio.run(_leave_while_held(stack, gated, "after-a-retry", stream=True, held=1))
        end = _end_of(stack, "after-a-retry")
        assert (end["outcome"], end["attempts"], end["worker"]) == (
            "cancelled", 2, gated.url), end
        _held_by(gated, 0)  # the worker let it go too
        # The dead worker is marked down now: the gated one is tried first.
        asyncio.run(_leave_while_held(stack, gated, "first-attempt", stream=False, held=1))
        end = _end_of(stack, "first-attempt")
        assert (end["outcome"], end["attempts"], end["worker"]) == (
            "cancelled", 1, gated.url), end
        assert stack.inflight()["inflight"] == 0
