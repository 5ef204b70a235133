"""The span of each request of a bidirectional stream is a SERVER span of the method
like the call's, so it carries what OpenTelemetry's rpc conventions require of one.

Before, those spans had no ``rpc.grpc.status_code`` (span metrics grouped them under no
code) and one that failed was an ``ERROR`` without ``error.type`` or the exception.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import grpc
import grpc.aio
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, serving


async def _answer(
    requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext
) -> AsyncIterator[bytes]:
    async for request in requests:
        if request == b"boom":
            raise LookupError("no such model")
        yield request


def test_each_stream_request_span_has_its_status_code_and_error_marks(
    log_lines: LogLines,
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    generic = grpc.method_handlers_generic_handler(
        "probe.Chat", {"Talk": grpc.stream_stream_rpc_method_handler(_answer)}
    )

    async def run() -> grpc.StatusCode:
        async with (
            serving(
                lambda s: s.add_generic_rpc_handlers((generic,)),
                interceptors=[RequestTracingInterceptor(tracer_provider=provider)],
            ) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
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
