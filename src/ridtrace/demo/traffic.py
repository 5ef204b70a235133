"""Sending the planned calls concurrently and recording what each caller received."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import httpx

from ridtrace.demo.clients import read_answer, request_body
from ridtrace.demo.plan import CallResult, PlannedCall, verdict
from ridtrace.frontend_plugin.wire import CLIENT_KEEP_ALIVE_SECONDS

__all__ = ["send_traffic"]


async def _one(client: httpx.AsyncClient, call: PlannedCall) -> CallResult:
    result = CallResult(call=call)
    body = request_body(call)
    try:
        async with client.stream("POST", call.route, json=body, headers=call.headers) as response:
            result.status = response.status_code
            result.server_request_id = response.headers.get("x-server-request-id")
            if call.disconnect:
                # Walk away after the first bytes: a real client hang-up mid-stream.
                async for _ in response.aiter_raw():
                    break
                result.disconnected = True
                return result
            raw = await response.aread()
        result.text, result.error = read_answer(call, response.status_code, raw)
    except httpx.HTTPError as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    return result


async def _run(
    base_url: str,
    plan: list[PlannedCall],
    concurrency: int,
    on_done: Callable[[CallResult], None] | None,
) -> list[CallResult]:
    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(
        max_connections=concurrency,
        max_keepalive_connections=concurrency,
        keepalive_expiry=CLIENT_KEEP_ALIVE_SECONDS,
    )
    timeout = httpx.Timeout(60.0, connect=10.0)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=timeout) as client:

        async def bounded(call: PlannedCall) -> CallResult:
            async with gate:
                result = await _one(client, call)
            if on_done is not None:
                with contextlib.suppress(Exception):  # a progress bar must not fail a call
                    on_done(result)
            return result

        return list(await asyncio.gather(*(bounded(call) for call in plan)))


def send_traffic(
    base_url: str,
    plan: list[PlannedCall],
    *,
    concurrency: int,
    on_done: Callable[[CallResult], None] | None = None,
) -> list[CallResult]:
    """Send every planned call (at most ``concurrency`` at once) and judge the answers."""
    results = asyncio.run(_run(base_url, plan, concurrency, on_done))
    verdict(results)
    return results
