"""Lines grpc.aio logs about a call after its handler ended carry the call's ids.

grpc.aio writes its DEBUG ``RPC cancelled for servicer method [...]`` line in the
call's own task once the handler has unwound, after the interceptor restored the
request context: the line had no ``request_id``, so a cancel in a DEBUG log could not
be joined to its request, as DESIGN.md's log contract asks of every line written while
a request is handled.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import grpc.aio
import pytest

from ridtrace.tracing import RequestIdsFilter
from ridtrace.tracing.grpc import RequestTracingInterceptor
from ridtrace.tracing.logs import configure_logging
from tests.tracing.grpc.conftest import LogLines, service_of, serving

CALL_TIMEOUT = 10.0
CANCELLED_LINE = "RPC cancelled for servicer method"


@pytest.fixture
def stdlib_lines() -> LogLines:
    sink = LogLines()
    configure_logging(sink, service="grpc-test", level="DEBUG", intercept_stdlib=True)
    return sink


def _slow_service(entered: asyncio.Queue[None]) -> Any:
    async def unary(request: bytes, context: Any) -> bytes:
        entered.put_nowait(None)
        await asyncio.sleep(CALL_TIMEOUT)
        return b""

    async def stream(request: bytes, context: Any) -> AsyncIterator[bytes]:
        yield b"first"
        entered.put_nowait(None)
        await asyncio.sleep(CALL_TIMEOUT)

    return service_of(
        {
            "Unary": grpc.unary_unary_rpc_method_handler(unary),
            "Stream": grpc.unary_stream_rpc_method_handler(stream),
        },
        service="probe.Slow",
    )


async def _until(written: Callable[[], bool]) -> None:
    """Wait, with a deadline, for lines another task writes."""
    deadline = asyncio.get_running_loop().time() + CALL_TIMEOUT
    while not written():
        assert asyncio.get_running_loop().time() < deadline, "the lines never came"
        await asyncio.sleep(0.01)


async def _cancel_calls(method: str, client_ids: list[str], written: Callable[[], bool]) -> None:
    """One call per client id, each cancelled by its client once its handler waits; then
    wait until ``written`` says grpc's lines about the cancels are in."""
    entered: asyncio.Queue[None] = asyncio.Queue()
    async with (
        serving(_slow_service(entered), interceptors=[RequestTracingInterceptor()]) as target,
        grpc.aio.insecure_channel(target) as channel,
    ):
        for client_id in client_ids:
            metadata = (("x-request-id", client_id),)
            if method == "Unary":
                call: Any = channel.unary_unary(f"/probe.Slow/{method}")(
                    b"", metadata=metadata, timeout=CALL_TIMEOUT
                )
            else:
                call = channel.unary_stream(f"/probe.Slow/{method}")(
                    b"", metadata=metadata, timeout=CALL_TIMEOUT
                )
                assert await call.read() == b"first"
            await asyncio.wait_for(entered.get(), CALL_TIMEOUT)
            call.cancel()
        await _until(written)


@pytest.mark.parametrize("method", ["Unary", "Stream"])
def test_grpcs_rpc_cancelled_line_carries_the_calls_ids(
    stdlib_lines: LogLines, method: str
) -> None:
    def cancelled() -> list[dict[str, Any]]:
        return [x for x in stdlib_lines.lines if CANCELLED_LINE in x["message"]]

    def written() -> bool:
        return len(cancelled()) == 2 and len(stdlib_lines.events("request.end")) == 2

    asyncio.run(_cancel_calls(method, ["first", "second"], written))

    ends = {end["x_request_id"]: end for end in stdlib_lines.events("request.end")}
    assert sorted(str(line.get("x_request_id")) for line in cancelled()) == ["first", "second"]
    for line in cancelled():
        # Each line names its own call, not the other one (one task per call).
        end = ends[line["x_request_id"]]
        assert line.get("request_id") == end["request_id"]
        assert (line["trace_id"], line["span_id"]) == (end["trace_id"], end["span_id"])
        assert line["level"] == "DEBUG"


def test_request_ids_filter_gives_grpcs_line_the_calls_ids(log_lines: LogLines) -> None:
    """An application's own standard-library handler with ridtrace's filter."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if CANCELLED_LINE in record.getMessage():
                records.append(record)

    handler = Keep()
    handler.addFilter(RequestIdsFilter())
    grpc_logger = logging.getLogger("grpc._cython.cygrpc")
    old_level = grpc_logger.level
    grpc_logger.addHandler(handler)
    grpc_logger.setLevel(logging.DEBUG)
    try:
        asyncio.run(_cancel_calls("Unary", ["filtered"], lambda: bool(records and log_lines.events("request.end"))))
    finally:
        grpc_logger.removeHandler(handler)
        grpc_logger.setLevel(old_level)

    (end,) = log_lines.events("request.end")
    (record,) = records
    assert record.request_id == end["request_id"]  # type: ignore[attr-defined]
    assert record.x_request_id == "filtered"  # type: ignore[attr-defined]
