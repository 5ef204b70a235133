"""A call whose deadline passed has an error span, as OpenTelemetry's rpc conventions say.

Its lines record it ``DEADLINE_EXCEEDED`` / ``cancelled`` (the client gave up, docs/grpc.md),
but a server span with that code is an error under the conventions, as every
server-fault code is. The span's status was left unset: in Jaeger and in span-derived
error rates the calls that ran out of time looked like successes.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent import futures
from typing import Any

import grpc
import grpc.aio
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, service_of, traced_channel
from tests.tracing.grpc.test_grpc_sync_server import CALL_TIMEOUT, _wait_until

DEADLINE = 0.3
SYNC_DEADLINE = 1.5


def _recording() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _assert_deadline_error(log_lines: LogLines, exporter: InMemorySpanExporter) -> None:
    (end,) = log_lines.events("request.end", stream_index=None)
    assert (end["grpc_status"], end["outcome"]) == ("DEADLINE_EXCEEDED", "cancelled")
    calls: list[ReadableSpan] = [
        s for s in exporter.get_finished_spans() if "stream_index" not in (s.attributes or {})
    ]
    (span,) = calls
    attributes = span.attributes or {}
    assert attributes["rpc.grpc.status_code"] == grpc.StatusCode.DEADLINE_EXCEEDED.value[0]
    assert span.status.status_code is StatusCode.ERROR
    assert attributes["error.type"] == "DEADLINE_EXCEEDED"
    # The requests of a stream the deadline ended carry the same marks.
    for item in exporter.get_finished_spans():
        if "stream_index" in (item.attributes or {}):
            assert item.status.status_code is StatusCode.ERROR


async def _waits(request: Any, context: grpc.aio.ServicerContext) -> bytes:
    await asyncio.Event().wait()  # until the deadline cancels it
    raise AssertionError("unreachable")


async def _answers_then_waits(requests: Any, context: grpc.aio.ServicerContext) -> Any:
    async for request in requests:
        yield request
        await asyncio.Event().wait()


@pytest.mark.parametrize("method", ["Waits", "AnswersThenWaits"])
def test_a_grpc_aio_call_past_its_deadline_has_an_error_span(
    log_lines: LogLines, method: str
) -> None:
    provider, exporter = _recording()
    handlers = {
        "Waits": grpc.unary_unary_rpc_method_handler(_waits),
        "AnswersThenWaits": grpc.stream_stream_rpc_method_handler(_answers_then_waits),
    }

    async def go() -> grpc.StatusCode | None:
        async with traced_channel(service_of(handlers), provider) as channel:
            code = None
            try:
                if method == "Waits":
                    await channel.unary_unary("/t.S/Waits")(b"", timeout=DEADLINE)
                else:
                    call = channel.stream_stream("/t.S/AnswersThenWaits")(
                        iter([b"one"]), timeout=DEADLINE
                    )
                    _ = [m async for m in call]
            except grpc.aio.AioRpcError as error:
                code = error.code()
            await log_lines.wait_for(
                lambda lines: bool(lines.events("request.end", stream_index=None))
            )
            return code

    assert asyncio.run(go()) is grpc.StatusCode.DEADLINE_EXCEEDED
    _assert_deadline_error(log_lines, exporter)


def test_a_synchronous_server_call_past_its_deadline_has_an_error_span(
    log_lines: LogLines,
) -> None:
    provider, exporter = _recording()

    def outlives_its_deadline(request: bytes, context: grpc.ServicerContext) -> bytes:
        ended = threading.Event()
        # The server never interrupts a handler. A call already over takes no callback
        # (add_callback says False), and waiting for one cost the test its whole wait.
        if context.add_callback(ended.set):
            ended.wait(CALL_TIMEOUT)
        return b"late"

    pool = futures.ThreadPoolExecutor(2)
    server = grpc.server(pool, interceptors=[RequestTracingInterceptor(tracer_provider=provider)])
    methods = {"Late": grpc.unary_unary_rpc_method_handler(outlives_its_deadline)}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("t.S", methods),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with (
            grpc.insecure_channel(f"127.0.0.1:{port}") as channel,
            pytest.raises(grpc.RpcError) as raised,
        ):
            # Longer than the other cases': a pool thread that took the call only after
            # its deadline never ran the handler (grpc's own check; docs/grpc.md).
            channel.unary_unary("/t.S/Late")(b"", timeout=SYNC_DEADLINE)
        assert raised.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
        _wait_until(lambda: len(exporter.get_finished_spans()) == 1)
    finally:
        server.stop(None)
        pool.shutdown(wait=False)
    _assert_deadline_error(log_lines, exporter)
