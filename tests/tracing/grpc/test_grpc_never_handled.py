"""grpc.aio calls that end before their handler runs are recorded (docs/grpc.md).

grpc.aio reads a unary request's message after the interceptors ran and before the
handler is called. A call whose deadline passed meanwhile (an event loop busy with other
calls) was dropped there unseen: no id, no lines, no span, while its client got
``DEADLINE_EXCEEDED``. ridtrace records it from what its interceptor was given.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import grpc.aio
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ridtrace.tracing.grpc import RequestTracingInterceptor
from ridtrace.tracing.grpc.status import NEVER_HANDLED_ERROR
from tests.tracing.grpc.conftest import LogLines, service_of, serving

SERVICE = "probe.Busy"
CALL_TIMEOUT = 30.0
# Long enough for the call to reach the server, which is all it must do before its
# deadline: the server's loop is held until the client has seen the deadline pass.
SHORT_DEADLINE = 0.3


@pytest.fixture
def spans() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def busy_server(
    log_lines: LogLines, spans: InMemorySpanExporter
) -> Iterator[tuple[str, threading.Event, threading.Event]]:
    """A grpc.aio server in a thread of its own whose ``Block`` handler holds the event
    loop (a synchronous wait in a coroutine) until the test releases it."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    holding, release = threading.Event(), threading.Event()

    async def block(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        holding.set()
        release.wait(CALL_TIMEOUT)  # the loop is held: no other call moves meanwhile
        return b"released"

    async def echo(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        return request

    async def stream(request: bytes, context: grpc.aio.ServicerContext) -> Any:
        yield request

    methods = {
        "Block": grpc.unary_unary_rpc_method_handler(block),
        "Echo": grpc.unary_unary_rpc_method_handler(echo),
        "Stream": grpc.unary_stream_rpc_method_handler(stream),
    }
    address: list[str] = []
    ready, stop = threading.Event(), threading.Event()

    def run() -> None:
        async def main() -> None:
            server = grpc.aio.server(
                interceptors=[RequestTracingInterceptor(tracer_provider=provider)])
            server.add_generic_rpc_handlers(
                (grpc.method_handlers_generic_handler(SERVICE, methods),))
            address.append(f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}")
            await server.start()
            ready.set()
            while not stop.is_set():
                await asyncio.sleep(0.01)
            await server.stop(None)

        asyncio.run(main())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(CALL_TIMEOUT)
    try:
        yield address[0], holding, release
    finally:
        release.set()
        stop.set()
        thread.join(CALL_TIMEOUT)


def _late_call(
    address: str, holding: threading.Event, release: threading.Event,
    method: str, call: Callable[[Any, str], Any],
) -> None:
    """`method` called with a short deadline while ``Block`` holds the server's loop."""
    with grpc.insecure_channel(address) as channel:
        grpc.channel_ready_future(channel).result(timeout=CALL_TIMEOUT)
        blocked = channel.unary_unary(f"/{SERVICE}/Block").future(b"", timeout=CALL_TIMEOUT)
        assert holding.wait(CALL_TIMEOUT)
        with pytest.raises(grpc.RpcError) as late:
            call(channel, method)
        assert late.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
        release.set()
        assert blocked.result(timeout=CALL_TIMEOUT) == b"released"
        # A call after both: the server has taken up the late one by the time it answers.
        echo = channel.unary_unary(f"/{SERVICE}/Echo")
        assert echo(b"after", timeout=CALL_TIMEOUT) == b"after"


def _unary(channel: grpc.Channel, method: str) -> Any:
    return channel.unary_unary(method)(
        b"late", timeout=SHORT_DEADLINE, metadata=(("x-request-id", "late-1"),))


def _server_streaming(channel: grpc.Channel, method: str) -> Any:
    return list(channel.unary_stream(method)(
        b"late", timeout=SHORT_DEADLINE, metadata=(("x-request-id", "late-1"),)))


@pytest.mark.parametrize(("method", "call"), [
    ("Echo", _unary), ("Stream", _server_streaming),
], ids=["unary", "server-streaming"])
def test_a_call_whose_deadline_passes_before_its_handler_runs_is_recorded(
    busy_server: tuple[str, threading.Event, threading.Event],
    log_lines: LogLines, spans: InMemorySpanExporter,
    method: str, call: Callable[[Any, str], Any],
) -> None:
    address, holding, release = busy_server
    _late_call(address, holding, release, f"/{SERVICE}/{method}", call)

    (start,) = log_lines.events("request.start", x_request_id="late-1")
    (end,) = log_lines.events("request.end", x_request_id="late-1")
    assert start["request_id"] == end["request_id"] != "late-1"  # minted, as any call's
    assert start["rpc_method"] == end["rpc_method"] == f"/{SERVICE}/{method}"
    assert (end["outcome"], end["error"]) == ("cancelled", NEVER_HANDLED_ERROR)
    # What the client got is gRPC's own status, unknown to the server: none is claimed.
    assert "status" not in end and "grpc_status" not in end
    (span,) = [s for s in spans.get_finished_spans()
               if (s.attributes or {}).get("x_request_id") == "late-1"]
    assert (span.attributes or {})["request_id"] == start["request_id"]
    assert "rpc.grpc.status_code" not in (span.attributes or {})
    # The calls that did run are recorded once each, as before.
    assert [e["rpc_method"] for e in log_lines.events("request.end")].count(
        f"/{SERVICE}/Block") == 1


class _LookupInATaskOfItsOwn(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Listed before ridtrace's: runs the rest of the chain in a task of its own, as
    ``asyncio.wait_for`` does on Python 3.11 (a timeout around the lookup)."""

    async def intercept_service(self, continuation: Any, details: Any) -> Any:
        return await asyncio.create_task(continuation(details))


class _SlowCheck(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Listed after ridtrace's: an asynchronous token check that takes its time."""

    def __init__(self, passed: asyncio.Event) -> None:
        self.passed = passed

    async def intercept_service(self, continuation: Any, details: Any) -> Any:
        await self.passed.wait()
        return await continuation(details)


async def _echo(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    return request


def test_a_call_is_recorded_once_when_an_interceptor_runs_ridtraces_in_a_task_of_its_own(
    log_lines: LogLines,
) -> None:
    # ridtrace's interceptor then runs in that short task, not the call's: its end
    # recorded every call a second time, as never handled (6 calls, 12 records).
    async def go() -> None:
        async with serving(
            service_of({"Echo": grpc.unary_unary_rpc_method_handler(_echo)}, SERVICE),
            interceptors=[_LookupInATaskOfItsOwn(), RequestTracingInterceptor()],
        ) as address, grpc.aio.insecure_channel(address) as channel:
            echo = channel.unary_unary(f"/{SERVICE}/Echo")
            for n in range(3):
                assert await echo(b"x", timeout=CALL_TIMEOUT,
                                  metadata=(("x-request-id", f"c{n}"),)) == b"x"
            await log_lines.wait_for(lambda lines: len(lines.events("request.end")) == 3)
            # A call after them: a second record of any would have been written by now.
            await echo(b"x", timeout=CALL_TIMEOUT)
            await log_lines.wait_for(lambda lines: len(lines.events("request.end")) >= 4)

    asyncio.run(go())
    ends = log_lines.events("request.end")
    assert sorted(e.get("x_request_id") or "-" for e in ends) == ["-", "c0", "c1", "c2"]
    assert all(e["grpc_status"] == "OK" for e in ends)


def test_a_call_that_ends_while_an_interceptor_after_ridtraces_awaits_is_recorded(
    log_lines: LogLines,
) -> None:
    # The order docs/grpc.md advises (ridtrace's first, an asynchronous check after): a
    # deadline passing during the check ended the call there, before any handler.
    async def go() -> None:
        passed = asyncio.Event()
        async with serving(
            service_of({"Echo": grpc.unary_unary_rpc_method_handler(_echo)}, SERVICE),
            interceptors=[RequestTracingInterceptor(), _SlowCheck(passed)],
        ) as address, grpc.aio.insecure_channel(address) as channel:
            echo = channel.unary_unary(f"/{SERVICE}/Echo")
            with pytest.raises(grpc.aio.AioRpcError) as late:
                await echo(b"x", timeout=SHORT_DEADLINE, metadata=(("x-request-id", "slow"),))
            assert late.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
            await log_lines.wait_for(lambda lines: bool(lines.events("request.end")))
            passed.set()
            assert await echo(b"y", timeout=CALL_TIMEOUT) == b"y"
            await log_lines.wait_for(lambda lines: len(lines.events("request.end")) == 2)

    asyncio.run(go())
    late_end, served = log_lines.events("request.end")
    assert (late_end["x_request_id"], late_end["outcome"]) == ("slow", "cancelled")
    assert late_end["error"] == NEVER_HANDLED_ERROR and "grpc_status" not in late_end
    assert served["grpc_status"] == "OK"
