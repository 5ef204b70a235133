"""A grpc.aio handler whose ``asyncio.TaskGroup`` child fails is recorded as answered.

On Python 3.11 and 3.12, a TaskGroup wakes its task with a cancel when a child fails
and leaves that cancel request counted (CPython gh-116720, fixed in 3.13), so the
handler's task looked cancelled: every call whose TaskGroup child raised (``UNKNOWN``
for the client) or aborted (``context.abort(NOT_FOUND)`` in a fan-out) was recorded
``CANCELLED`` / ``cancelled``, as if its client had gone away: no WARN, no error span.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import grpc.aio

from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, service_of, serving

CALL_TIMEOUT = 30.0


async def _fan_out(request: bytes, context: Any) -> bytes:
    async def child() -> None:
        if request == b"abort":
            await context.abort(grpc.StatusCode.NOT_FOUND, "no such item")
        raise ValueError("a child failed")

    try:
        async with asyncio.TaskGroup() as group:
            group.create_task(child())
    except* ValueError as group_error:
        if request == b"unwrap":  # the usual shape: the first error, not the group
            raise group_error.exceptions[0]  # noqa: B904 - as handlers write it
        if request == b"translate":
            raise RuntimeError("the fan-out failed")  # noqa: B904
        raise
    return b"unreachable"


def test_a_failed_task_group_child_is_recorded_as_the_client_got_it(
    log_lines: LogLines,
) -> None:
    handlers = {"FanOut": grpc.unary_unary_rpc_method_handler(_fan_out)}

    async def run() -> list[grpc.StatusCode]:
        codes = []
        async with (
            serving(service_of(handlers), interceptors=[RequestTracingInterceptor()]) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            for request in (b"raise", b"abort", b"unwrap", b"translate"):
                try:
                    await channel.unary_unary("/t.S/FanOut")(request, timeout=CALL_TIMEOUT)
                except grpc.aio.AioRpcError as error:
                    codes.append(error.code())
            await log_lines.wait_for(lambda lines: len(lines.events("request.end")) == 4)
        return codes

    codes = asyncio.run(run())
    assert codes == [grpc.StatusCode.UNKNOWN, grpc.StatusCode.NOT_FOUND] + [
        grpc.StatusCode.UNKNOWN
    ] * 2
    raised, aborted, *unwrapped = log_lines.events("request.end")
    # An error raised out of an except* (or a group's first error re-raised) was
    # recorded CANCELLED / cancelled: the group's leftover cancel was taken for a client's.
    for end in unwrapped:
        assert (end["grpc_status"], end["outcome"], end["level"]) == ("UNKNOWN", "error", "WARN")
    assert (raised["grpc_status"], raised["outcome"], raised["level"]) == (
        "UNKNOWN", "error", "WARN"
    )
    assert (aborted["grpc_status"], aborted["outcome"]) == ("NOT_FOUND", "ok")
