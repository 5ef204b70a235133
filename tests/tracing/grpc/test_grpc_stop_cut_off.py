"""Calls serve_until_signalled's stop cuts off at the end of its grace period.

gRPC cancels them, and the handler sees what a client's cancel looks like, but the
client got UNAVAILABLE ("Cancelling all calls"): the server ended the call. They were
recorded CANCELLED / cancelled, blaming the client; HTTP requests ``ridtrace serve``
ends at shutdown are outcome ``error``.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator

import grpc
import grpc.aio
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.trace import NoOpTracerProvider

from ridtrace.tracing.grpc import RequestTracingInterceptor, serve_until_signalled
from tests.tracing.grpc.conftest import LogLines

SERVICE = "probe.Stop"
CALL_TIMEOUT = 10.0


def _serving_until_signalled(
    methods: dict[str, grpc.RpcMethodHandler],
) -> tuple[int, asyncio.Future[None]]:
    """A traced grpc.aio server of `methods` on a free port, stopped by SIGUSR1 through
    serve_until_signalled with a 0.2 s grace; its port and the stop's future."""
    server = grpc.aio.server(interceptors=[RequestTracingInterceptor()])
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, methods),))
    port = server.add_insecure_port("127.0.0.1:0")
    serving = asyncio.ensure_future(
        serve_until_signalled(server, grace=0.2, signals=(signal.SIGUSR1,)))
    return port, serving


def test_calls_cut_off_by_the_stop_are_recorded_unavailable_not_cancelled(
    log_lines: LogLines,
) -> None:
    handlers_started = 0
    started = asyncio.Event()

    async def hang(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        nonlocal handlers_started
        handlers_started += 1
        if handlers_started == 2:
            started.set()
        await asyncio.Event().wait()  # outlives the grace period
        raise AssertionError("unreachable")

    async def trickle(request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
        yield b"first"
        await hang(request, context)

    methods = {
        "Hang": grpc.unary_unary_rpc_method_handler(hang),
        "Trickle": grpc.unary_stream_rpc_method_handler(trickle),
    }

    async def go() -> tuple[list[grpc.StatusCode], list[grpc.StatusCode]]:
        port, serving = _serving_until_signalled(methods)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            unary = channel.unary_unary(f"/{SERVICE}/Hang")(b"", timeout=CALL_TIMEOUT)
            stream = channel.unary_stream(f"/{SERVICE}/Trickle")(b"", timeout=CALL_TIMEOUT)
            assert await stream.read() == b"first"
            await asyncio.wait_for(started.wait(), CALL_TIMEOUT)
            os.kill(os.getpid(), signal.SIGUSR1)
            await asyncio.wait_for(serving, CALL_TIMEOUT)
            return [await unary.code(), await stream.code()], []

    codes, _ = asyncio.run(go())
    assert codes == [grpc.StatusCode.UNAVAILABLE] * 2
    ends = log_lines.events("request.end")
    assert len(ends) == 2
    for end in ends:
        assert (end["grpc_status"], end["status"], end["outcome"], end["level"]) == (
            "UNAVAILABLE", 14, "error", "WARN",
        ), end


def test_request_streams_cut_off_by_the_stop_are_recorded_unavailable_not_ok(
    log_lines: LogLines,
) -> None:
    # A handler reading its request stream sees the stop's cancel as the stream's end
    # and returns: the client-streaming call was recorded OK and the bidirectional one
    # too, while both clients got UNAVAILABLE.
    waiting = asyncio.Semaphore(0)

    async def collect(requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext
                      ) -> bytes:
        count = 0
        async for _ in requests:
            count += 1
            waiting.release()
        return b"%d" % count

    async def echo(requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext
                   ) -> AsyncIterator[bytes]:
        async for message in requests:
            waiting.release()
            yield message

    methods = {
        "Collect": grpc.stream_unary_rpc_method_handler(collect),
        "Echo": grpc.stream_stream_rpc_method_handler(echo),
    }

    async def go() -> list[grpc.StatusCode]:
        port, serving = _serving_until_signalled(methods)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            collecting = channel.stream_unary(f"/{SERVICE}/Collect")(timeout=CALL_TIMEOUT)
            echoing = channel.stream_stream(f"/{SERVICE}/Echo")(timeout=CALL_TIMEOUT)
            await collecting.write(b"one")
            await echoing.write(b"one")
            assert await echoing.read() == b"one"
            for _ in range(2):  # both handlers hold a message and wait for the next
                await asyncio.wait_for(waiting.acquire(), CALL_TIMEOUT)
            os.kill(os.getpid(), signal.SIGUSR1)
            await asyncio.wait_for(serving, CALL_TIMEOUT)
            return [await collecting.code(), await echoing.code()]

    codes = asyncio.run(go())
    assert codes == [grpc.StatusCode.UNAVAILABLE] * 2
    ends = [x for x in log_lines.events("request.end") if "stream_index" not in x]
    assert len(ends) == 2
    for end in ends:
        assert (end["grpc_status"], end["outcome"], end["level"]) == (
            "UNAVAILABLE", "error", "WARN"), end


def test_a_cut_off_call_is_waited_for_and_counted_when_no_span_records(
    log_lines: LogLines, reader: InMemoryMetricReader
) -> None:
    # serve_until_signalled flushes once the calls still running have ended; a call was
    # "running" only while a span recorded it. With metrics and no tracing, a cut-off
    # call whose cleanup awaits ended after the flush: its count never reached the
    # collector, and its request.end came after the stop, recorded CANCELLED.
    started = asyncio.Event()

    async def hang_then_clean_up(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        started.set()
        try:
            await asyncio.Event().wait()  # outlives the grace period
        finally:
            await asyncio.sleep(0.2)  # a cleanup that awaits (a release over the network)
        raise AssertionError("unreachable")

    methods = {"Hang": grpc.unary_unary_rpc_method_handler(hang_then_clean_up)}

    async def go() -> grpc.StatusCode:
        interceptor = RequestTracingInterceptor(tracer_provider=NoOpTracerProvider())
        server = grpc.aio.server(interceptors=[interceptor])
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE, methods),)
        )
        port = server.add_insecure_port("127.0.0.1:0")
        serving = asyncio.ensure_future(
            serve_until_signalled(server, grace=0.1, signals=(signal.SIGUSR1,))
        )
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = channel.unary_unary(f"/{SERVICE}/Hang")(b"", timeout=CALL_TIMEOUT)
            await asyncio.wait_for(started.wait(), CALL_TIMEOUT)
            os.kill(os.getpid(), signal.SIGUSR1)
            await asyncio.wait_for(serving, CALL_TIMEOUT)
            # What the flush at the end of serve_until_signalled could send: all of it.
            (end,) = log_lines.events("request.end")
            assert (end["grpc_status"], end["outcome"]) == ("UNAVAILABLE", "error"), end
            counted = _requests_counted(reader)
            assert counted == {("error", f"/{SERVICE}/Hang"): 1}, counted
            return await call.code()

    assert asyncio.run(go()) is grpc.StatusCode.UNAVAILABLE


def _requests_counted(reader: InMemoryMetricReader) -> dict[tuple[str, str], float]:
    data = reader.get_metrics_data()
    counted: dict[tuple[str, str], float] = {}
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name != "ridtrace.requests":
                    continue
                for point in metric.data.data_points:
                    attributes = dict(point.attributes or {})
                    key = (str(attributes["outcome"]), str(attributes["route"]))
                    if point.value:  # series declared at 0 are no calls
                        counted[key] = point.value
    return counted
