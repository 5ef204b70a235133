"""Sending the planned calls concurrently and recording what each caller received."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import httpx

from ridtrace.demo.callers import CallerSpans
from ridtrace.demo.clients import read_answer, request_body
from ridtrace.demo.loop_signals import stop_signals_cancel, stop_signals_deferred
from ridtrace.demo.plan import CallResult, PlannedCall, verdict
from ridtrace.frontend_plugin.wire import CLIENT_KEEP_ALIVE_SECONDS

__all__ = ["send_traffic"]


async def _one(client: httpx.AsyncClient, call: PlannedCall, spans: CallerSpans | None
                ) -> CallResult:
    result = CallResult(call=call)
    body = request_body(call)
    span = spans.start(call, client.base_url) if spans is not None else None
    error_type = None
    try:
        headers = CallerSpans.headers(call, span)
        async with client.stream("POST", call.route, json=body, headers=headers) as response:
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
        error_type = type(exc).__name__
    finally:
        CallerSpans.end(span, result, error_type)
    return result


def _is_interrupt(exc: BaseException | None) -> bool:
    """KeyboardInterrupt, also when anyio's task group (inside httpx) wrapped it."""
    if isinstance(exc, KeyboardInterrupt):
        return True
    inner = getattr(exc, "exceptions", None)  # BaseExceptionGroup (3.11+ or backport)
    return bool(inner) and all(_is_interrupt(e) for e in inner)  # type: ignore[union-attr]


def _quiet_interrupt(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    # A second Ctrl-C raises KeyboardInterrupt inside whichever task runs (the demo's own
    # signal handler, see ridtrace.cli.demo and demo.loop_signals); asyncio then logs
    # "Task exception was never retrieved" with ~80 lines of traceback when the task is
    # collected. The interrupt
    # is reported once, by the CLI; anything else keeps asyncio's default report.
    if _is_interrupt(context.get("exception")):
        return
    loop.default_exception_handler(context)


async def _run(
    base_url: str,
    plan: list[PlannedCall],
    concurrency: int,
    on_done: Callable[[CallResult], None] | None,
    spans: CallerSpans | None,
) -> list[CallResult]:
    asyncio.get_running_loop().set_exception_handler(_quiet_interrupt)
    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(
        max_connections=concurrency,
        max_keepalive_connections=concurrency,
        keepalive_expiry=CLIENT_KEEP_ALIVE_SECONDS,
    )
    timeout = httpx.Timeout(60.0, connect=10.0)
    # The stack is on loopback: not through the environment's proxy (`start_stack`).
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=timeout,
                                 trust_env=False) as client:

        async def bounded(call: PlannedCall) -> CallResult:
            async with gate:
                result = await _one(client, call, spans)
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
    spans: CallerSpans | None = None,
) -> list[CallResult]:
    """Send every planned call (at most ``concurrency`` at once) and judge the answers;
    with ``spans``, each call exports its client span (the root of its trace)."""
    try:
        # A stop signal is held back while the loop is made and closed (raised there, it
        # left a half-made loop behind), and taken by the loop while it runs.
        runner = asyncio.Runner()
        try:
            with stop_signals_deferred():
                loop = runner.get_loop()

            def cancel_all() -> None:
                for task in asyncio.all_tasks(loop):
                    task.cancel()

            with stop_signals_cancel(loop, cancel_all):
                results = runner.run(_run(base_url, plan, concurrency, on_done, spans))
        finally:
            with stop_signals_deferred():
                runner.close()
    except BaseException as exc:
        # A Ctrl-C that landed in httpx's connect arrives as a BaseExceptionGroup, which
        # `except KeyboardInterrupt` upstream would not catch: one type for callers.
        if _is_interrupt(exc) and not isinstance(exc, KeyboardInterrupt):
            raise KeyboardInterrupt from None
        raise
    verdict(results)
    return results
