"""The span of each request of a bidirectional stream is a SERVER span of the method
like the call's, so it carries what OpenTelemetry's rpc conventions require of one.

Before, those spans had no ``rpc.grpc.status_code`` (span metrics grouped them under no
code) and one that failed was an ``ERROR`` without ``error.type`` or the exception.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from concurrent import futures
from typing import Any

import grpc
import grpc.aio
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, traced_channel


async def _answer(
    requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext
) -> AsyncIterator[bytes]:
    async for request in requests:
        if request == b"boom":
            raise LookupError("no such model")
        yield request


def _recorded_talk() -> tuple[InMemorySpanExporter, TracerProvider, Any]:
    """A span exporter, a provider exporting to it, and ``probe.Chat/Talk`` (`_answer`)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    generic = grpc.method_handlers_generic_handler(
        "probe.Chat", {"Talk": grpc.stream_stream_rpc_method_handler(_answer)}
    )
    return exporter, provider, generic


def test_each_stream_request_span_has_its_status_code_and_error_marks(
    log_lines: LogLines,
) -> None:
    exporter, provider, generic = _recorded_talk()

    async def run() -> grpc.StatusCode:
        async with traced_channel(lambda s: s.add_generic_rpc_handlers((generic,)), provider) as channel:
            call = channel.stream_stream("/probe.Chat/Talk")(
                iter([b"a", b"b", b"boom"]), timeout=10
            )
            answers = []
            with contextlib.suppress(grpc.aio.AioRpcError):
                async for answer in call:
                    answers.append(answer)
            assert answers == [b"a", b"b"]
            return await call.code()  # type: ignore[no-any-return]

    assert asyncio.run(run()) is grpc.StatusCode.UNKNOWN
    spans = [s for s in exporter.get_finished_spans() if s.kind is SpanKind.SERVER]
    assert all(s.attributes and "rpc.grpc.status_code" in s.attributes for s in spans)
    items = sorted(
        (s for s in spans if s.attributes and "stream_index" in s.attributes),
        key=lambda s: s.attributes["stream_index"] if s.attributes else -1,
    )
    assert [s.attributes["rpc.grpc.status_code"] for s in items if s.attributes] == [0, 0, 2]
    assert [s.status.status_code for s in items] == [StatusCode.UNSET] * 2 + [StatusCode.ERROR]
    failed = items[2]
    assert failed.attributes is not None and failed.attributes["error.type"] == "LookupError"
    assert [e.name for e in failed.events] == ["exception"]


async def _refuse_aio(
    requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext
) -> AsyncIterator[bytes]:
    async for request in requests:
        if request == b"overload":
            # Ended with a code set, not an exception: what a handler shedding load does.
            context.set_code(grpc.StatusCode.UNAVAILABLE)
            context.set_details("overloaded")
            return
        yield request


def _refuse_sync(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
    for request in requests:
        if request == b"overload":
            context.set_code(grpc.StatusCode.UNAVAILABLE)
            context.set_details("overloaded")
            return
        yield request


def _talk_aio(generic: grpc.GenericRpcHandler, provider: TracerProvider) -> grpc.StatusCode:
    async def run() -> grpc.StatusCode:
        async with traced_channel(lambda s: s.add_generic_rpc_handlers((generic,)), provider) as channel:
            call = channel.stream_stream("/probe.Chat/Talk")(
                iter([b"a", b"overload", b"c"]), timeout=10
            )
            with contextlib.suppress(grpc.aio.AioRpcError):
                assert [answer async for answer in call] == [b"a"]
            return await call.code()  # type: ignore[no-any-return]

    return asyncio.run(run())


def _talk_sync(generic: grpc.GenericRpcHandler, provider: TracerProvider) -> grpc.StatusCode:
    pool = futures.ThreadPoolExecutor(2)
    server = grpc.server(pool, interceptors=[RequestTracingInterceptor(tracer_provider=provider)])
    server.add_generic_rpc_handlers((generic,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = channel.stream_stream("/probe.Chat/Talk")(
                iter([b"a", b"overload", b"c"]), timeout=10
            )
            with contextlib.suppress(grpc.RpcError):
                assert list(call) == [b"a"]
            return call.code()  # type: ignore[no-any-return]
    finally:
        server.stop(None)
        pool.shutdown(wait=False, cancel_futures=True)


@pytest.mark.parametrize(
    ("talk", "behavior"), [(_talk_aio, _refuse_aio), (_talk_sync, _refuse_sync)],
    ids=["aio", "sync"],
)
def test_a_request_the_handler_ended_the_stream_on_with_a_code_has_that_code(
    log_lines: LogLines, talk: Any, behavior: Any
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    generic = grpc.method_handlers_generic_handler(
        "probe.Chat", {"Talk": grpc.stream_stream_rpc_method_handler(behavior)}
    )
    assert talk(generic, provider) is grpc.StatusCode.UNAVAILABLE
    [call_end] = log_lines.events("request.end", stream_requests=2)
    assert (call_end["grpc_status"], call_end["outcome"]) == ("UNAVAILABLE", "error")
    ends = {line["stream_index"]: line for line in log_lines.events("request.end")
            if "stream_index" in line}
    # Before: the request the call failed on was recorded ok, its span UNSET with code 0.
    assert (ends[0]["outcome"], ends[1]["outcome"]) == ("ok", "error")
    assert ends[1]["level"] == "WARN"
    items = sorted(
        (s for s in exporter.get_finished_spans() if s.attributes and "stream_index" in s.attributes),
        key=lambda s: s.attributes["stream_index"] if s.attributes else -1,
    )
    assert [s.attributes["rpc.grpc.status_code"] for s in items if s.attributes] == [0, 14]
    assert [s.status.status_code for s in items] == [StatusCode.UNSET, StatusCode.ERROR]
    assert items[1].attributes is not None
    assert items[1].attributes["error.type"] == "UNAVAILABLE"


def test_a_refused_metadata_id_is_flagged_on_each_stream_request_without_its_own(
    log_lines: LogLines,
) -> None:
    # A stream's messages inherit the call's ids; a refused metadata id was flagged on
    # the call's span and line only, so a Jaeger search for hostile ids missed them.
    exporter, provider, generic = _recorded_talk()

    async def run(metadata: tuple[tuple[str, str], ...]) -> None:
        async with traced_channel(lambda s: s.add_generic_rpc_handlers((generic,)),
                                  provider) as channel:
            call = channel.stream_stream("/probe.Chat/Talk")(
                iter([b"a", b"b"]), timeout=10, metadata=metadata)
            assert [answer async for answer in call] == [b"a", b"b"]

    asyncio.run(run((("x-request-id", "x" * 300),)))
    asyncio.run(run((("x-request-id", "good-1"),)))
    spans = [s.attributes for s in exporter.get_finished_spans()
             if s.kind is SpanKind.SERVER and s.attributes]
    flagged = [(a.get("stream_index"), a.get("x_request_id")) for a in spans
               if a.get("x_request_id_rejected")]
    assert sorted(flagged, key=str) == [(0, None), (1, None), (None, None)]
    starts = [x for x in log_lines.events("request.start") if "stream_index" in x]
    assert sorted(((x["stream_index"], x.get("x_request_id_rejected"), x.get("x_request_id"))
                   for x in starts), key=str) == [(0, None, "good-1"), (0, True, None),
                                                  (1, None, "good-1"), (1, True, None)]
