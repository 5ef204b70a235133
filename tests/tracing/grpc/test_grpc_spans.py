"""Spans as they arrive at an OTLP/HTTP receiver: one server span per call, the ids on
it, the caller's trace continued, and opentelemetry-instrumentation-grpc's span enriched
rather than doubled."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from concurrent import futures
from typing import Any

import grpc
import grpc.aio
import pytest
from opentelemetry.instrumentation.grpc import aio_server_interceptor, server_interceptor
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from ridtrace.tracing import configure_tracing, format_traceparent
from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan, otlp_receiver
from tests.support.propagators import XRAY_HEADER, XRAY_PARENT, XRAY_TRACE, XRayLikePropagator
from tests.tracing.grpc.conftest import (
    LogLines,
    Proto,
    metadata_dict,
    service_of,
    serving,
    traced_channel,
)
from tests.tracing.grpc.inference_service import build_servicer

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
SERVER = ProtoSpan.SpanKind.SPAN_KIND_SERVER
STATUS_ERROR = 2


def _provider(receiver: OtlpReceiver) -> TracerProvider:
    return configure_tracing(
        "grpc-test",
        environ={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint},
        set_global=False,
    )


async def _calls(proto: Proto, interceptors: list[Any]) -> dict[str, str]:
    """One unary call with a traceparent and one streaming call without; returns each
    call's server request id."""
    ids: dict[str, str] = {}
    servicer = build_servicer(proto)
    async with (
        serving(
            lambda s: proto.pb2_grpc.add_InferenceServicer_to_server(servicer, s),
            interceptors=interceptors,
        ) as target,
        grpc.aio.insecure_channel(target) as channel,
    ):
        stub = proto.pb2_grpc.InferenceStub(channel)
        call = stub.Infer(
            proto.pb2.InferRequest(prompt="p"),
            metadata=(
                ("x-request-id", "corr-1"),
                ("traceparent", format_traceparent(CALLER_TRACE, CALLER_SPAN)),
            ),
        )
        await call
        ids["unary"] = metadata_dict(await call.trailing_metadata())["x-server-request-id"][0]
        stream = stub.InferStream(proto.pb2.InferRequest(prompt="a b"))
        _ = [chunk async for chunk in stream]
        ids["stream"] = metadata_dict(await stream.trailing_metadata())["x-server-request-id"][0]
    return ids


def _by_request_id(spans: list[ReceivedSpan]) -> dict[str, ReceivedSpan]:
    return {str(s.attributes.get("request_id")): s for s in spans if s.kind == SERVER}


def test_one_server_span_per_call_with_both_ids_and_the_callers_trace(
    proto: Proto, log_lines: LogLines
) -> None:
    with otlp_receiver() as receiver:
        provider = _provider(receiver)
        ids = asyncio.run(_calls(proto, [RequestTracingInterceptor(tracer_provider=provider)]))
        provider.force_flush()
        spans = receiver.wait_for(2)
        provider.shutdown()
    server_spans = [s for s in spans if s.kind == SERVER]
    by_id = _by_request_id(spans)
    assert len(server_spans) == len(by_id)  # exactly one server span per call

    unary = by_id[ids["unary"]]
    assert unary.name == "ridtrace.inference.v1.Inference/Infer"
    assert unary.attributes["rpc.system"] == "grpc"
    assert unary.attributes["rpc.service"] == "ridtrace.inference.v1.Inference"
    assert unary.attributes["rpc.method"] == "Infer"
    assert unary.attributes["rpc.grpc.status_code"] == 0
    assert unary.attributes["x_request_id"] == "corr-1"
    assert unary.trace_id == CALLER_TRACE and unary.parent_span_id == CALLER_SPAN
    assert unary.service_name == "grpc-test"

    stream = by_id[ids["stream"]]
    assert stream.name.endswith("/InferStream") and "x_request_id" not in stream.attributes
    assert stream.trace_id != CALLER_TRACE and stream.parent_span_id == ""

    # The log lines name the same span: forensics can join them to traces.
    ends = {x["request_id"]: x for x in log_lines.events("request.end")}
    for request_id in (ids["unary"], ids["stream"]):
        assert ends[request_id]["span_id"] == by_id[request_id].span_id
        assert ends[request_id]["trace_id"] == by_id[request_id].trace_id
    assert ends[ids["unary"]]["parent_span_id"] == CALLER_SPAN


def test_a_failing_call_marks_the_span_as_an_error(proto: Proto, log_lines: LogLines) -> None:
    async def crashes(request: bytes, context: Any) -> bytes:
        raise RuntimeError("boom")

    handlers = {"Crash": grpc.unary_unary_rpc_method_handler(crashes)}
    with otlp_receiver() as receiver:
        provider = _provider(receiver)

        async def go() -> None:
            async with traced_channel(service_of(handlers), provider) as channel:
                with pytest.raises(grpc.aio.AioRpcError):
                    await channel.unary_unary("/t.S/Crash")(b"")

        asyncio.run(go())
        provider.force_flush()
        (span,) = receiver.wait_for(1)
        provider.shutdown()
    assert span.status_code == STATUS_ERROR
    assert span.attributes["rpc.grpc.status_code"] == grpc.StatusCode.UNKNOWN.value[0]
    # What failed, as over HTTP (error views and span metrics group by it).
    assert span.attributes["error.type"] == "RuntimeError"
    (end,) = log_lines.events("request.end")
    assert end["span_id"] == span.span_id and end["outcome"] == "error"


def test_enriches_the_opentelemetry_grpc_server_span_instead_of_adding_one(
    proto: Proto, log_lines: LogLines
) -> None:
    with otlp_receiver() as receiver:
        provider = _provider(receiver)
        otel = aio_server_interceptor(tracer_provider=provider)
        ids = asyncio.run(
            _calls(proto, [otel, RequestTracingInterceptor(tracer_provider=provider)])
        )
        provider.force_flush()
        spans = receiver.wait_for(2)
        provider.shutdown()
    server_spans = [s for s in spans if s.kind == SERVER]
    by_id = _by_request_id(spans)
    # Every server span is the instrumentation's, carrying ridtrace's ids: none doubled.
    assert set(by_id) >= {ids["unary"], ids["stream"]}
    assert len(server_spans) == len(by_id)
    unary = by_id[ids["unary"]]
    assert unary.attributes["x_request_id"] == "corr-1"
    assert unary.trace_id == CALLER_TRACE and unary.parent_span_id == CALLER_SPAN
    ends = {x["request_id"]: x for x in log_lines.events("request.end")}
    assert ends[ids["stream"]]["span_id"] == by_id[ids["stream"]].span_id


def test_a_call_to_an_unknown_method_is_answered_unimplemented_and_traced(
    proto: Proto, log_lines: LogLines
) -> None:
    """Before, gRPC answered it before any handler ran and the interceptor passed the
    lookup's None on: no request.start / request.end, no request_id, no span."""
    with otlp_receiver() as receiver:
        provider = _provider(receiver)

        async def go() -> tuple[Any, dict[str, list[Any]]]:
            async with traced_channel(lambda s: None, provider) as channel:
                call = channel.unary_unary("/t.S/Nope\n")(
                    b"x", metadata=(("x-request-id", "corr-9"),)
                )
                with pytest.raises(grpc.aio.AioRpcError) as failed:
                    await call
                return failed.value, metadata_dict(await call.trailing_metadata())

        error, trailing = asyncio.run(go())
        provider.force_flush()
        (span,) = receiver.wait_for(1)
        provider.shutdown()
    assert error.code() is grpc.StatusCode.UNIMPLEMENTED
    assert error.details() == "Method not found!"  # gRPC's own answer, unchanged
    (start,) = log_lines.events("request.start")
    (end,) = log_lines.events("request.end")
    assert trailing["x-server-request-id"] == [end["request_id"]] == [start["request_id"]]
    assert end["x_request_id"] == "corr-9"
    # The client's string, escaped: a line feed in a method name never splits a line.
    assert end["rpc_method"] == end["path"] == "/t.S/Nope\\n"
    assert (end["grpc_status"], end["status"], end["outcome"]) == ("UNIMPLEMENTED", 12, "error")
    assert end["messages_in"] == 0
    assert span.kind == SERVER and span.span_id == end["span_id"]
    # OpenTelemetry's rpc conventions: a method the server does not know is _OTHER (a
    # fixed span name, so a scanner cannot flood Jaeger's operation list).
    assert span.name == "_OTHER" and span.attributes["rpc.method"] == "_OTHER"
    assert span.attributes["rpc.method_original"] == "/t.S/Nope\\n"
    assert span.attributes["rpc.grpc.status_code"] == grpc.StatusCode.UNIMPLEMENTED.value[0]
    assert span.status_code == STATUS_ERROR
    assert span.attributes["error.type"] == "UNIMPLEMENTED"  # an abort: the code's name


def test_an_unknown_method_behind_opentelemetrys_interceptor_is_still_unimplemented(
    log_lines: LogLines,
) -> None:
    # docs/grpc.md lists OpenTelemetry's aio interceptor first; it iterates a
    # stream-response handler with `async for`, and ridtrace's handler for an unknown
    # method was a coroutine: the call failed UNKNOWN, with no ids, lines or count.
    provider, exporter = _memory_provider()
    interceptors = [aio_server_interceptor(tracer_provider=provider),
                    RequestTracingInterceptor(tracer_provider=provider)]

    async def go() -> tuple[Any, dict[str, list[Any]]]:
        async with (
            serving(lambda s: None, interceptors=interceptors) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            call = channel.unary_unary("/t.S/Nope")(b"x", metadata=(("x-request-id", "c-1"),))
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                await call
            return failed.value, metadata_dict(await call.trailing_metadata())

    error, trailing = asyncio.run(go())
    assert error.code() is grpc.StatusCode.UNIMPLEMENTED, error
    (end,) = log_lines.events("request.end")
    assert trailing["x-server-request-id"] == [end["request_id"]]
    assert end["grpc_status"] == "UNIMPLEMENTED" and end["x_request_id"] == "c-1"
    (span,) = exporter.get_finished_spans()  # OpenTelemetry's, with ridtrace's ids
    assert span.attributes is not None and span.attributes["request_id"] == end["request_id"]
    assert span.attributes["rpc.grpc.status_code"] == grpc.StatusCode.UNIMPLEMENTED.value[0]


def _memory_provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


async def _echo(request: bytes, context: Any) -> bytes:
    return request


async def _chunks(request: bytes, context: Any) -> AsyncIterator[bytes]:
    for _ in range(2):
        yield request


def _sync_echo(request: bytes, context: Any) -> bytes:
    return request


def _sync_chunks(request: bytes, context: Any) -> Iterator[bytes]:
    yield from (request, request)


@pytest.mark.parametrize("flavour", ["aio", "sync"])
def test_opentelemetry_grpc_interceptor_listed_after_ours_adds_no_second_server_span(
    log_lines: LogLines, flavour: str
) -> None:
    """Listed after ridtrace, opentelemetry-instrumentation-grpc's interceptor opened a
    second SERVER span per call, a root in a trace of its own (it continues the
    metadata's trace context, not the current span), beside ridtrace's, which the log
    lines name: two operations per call in Jaeger, and half of them unjoinable."""
    provider, exporter = _memory_provider()
    ours = RequestTracingInterceptor(tracer_provider=provider)
    if flavour == "aio":
        otel: Any = aio_server_interceptor(tracer_provider=provider)
        handlers = {"Echo": grpc.unary_unary_rpc_method_handler(_echo),
                    "Chunks": grpc.unary_stream_rpc_method_handler(_chunks)}

        async def go() -> None:
            async with (
                serving(
                    service_of(handlers),
                    interceptors=[ours, otel],
                ) as target,
                grpc.aio.insecure_channel(target) as channel,
            ):
                await channel.unary_unary("/t.S/Echo")(b"x", timeout=10)
                _ = [m async for m in channel.unary_stream("/t.S/Chunks")(b"x", timeout=10)]

        asyncio.run(go())
    else:
        otel = server_interceptor(tracer_provider=provider)
        sync_handlers = {"Echo": grpc.unary_unary_rpc_method_handler(_sync_echo),
                         "Chunks": grpc.unary_stream_rpc_method_handler(_sync_chunks)}
        pool = futures.ThreadPoolExecutor(2)
        server = grpc.server(pool, interceptors=[ours, otel])
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("t.S", sync_handlers),)
        )
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        try:
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                channel.unary_unary("/t.S/Echo")(b"x", timeout=10)
                list(channel.unary_stream("/t.S/Chunks")(b"x", timeout=10))
        finally:
            server.stop(None).wait(10)
            pool.shutdown()
    servers = [s for s in exporter.get_finished_spans() if s.kind == SpanKind.SERVER]
    assert sorted(s.name for s in servers) == ["t.S/Chunks", "t.S/Echo"]
    ends = {x["span_id"]: x for x in log_lines.events("request.end")}
    assert {format(s.context.span_id, "016x") for s in servers} == set(ends)


def _infer_once(proto: Proto, interceptor: Any, metadata: Any) -> None:
    """One Infer call with `metadata` through a grpc.aio server behind `interceptor`."""

    async def go() -> None:
        servicer = build_servicer(proto)
        async with (
            serving(
                lambda s: proto.pb2_grpc.add_InferenceServicer_to_server(servicer, s),
                interceptors=[interceptor],
            ) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            stub = proto.pb2_grpc.InferenceStub(channel)
            await stub.Infer(proto.pb2.InferRequest(prompt="p"), metadata=metadata)

    asyncio.run(go())


def test_a_b3_callers_trace_is_continued_when_b3_is_the_configured_propagator(
    proto: Proto, log_lines: LogLines
) -> None:
    # The interceptor collected only the W3C keys from the metadata, so under
    # OTEL_PROPAGATORS=b3 the caller's b3 never reached the propagator: every call
    # was a new trace, though the HTTP middleware continued the same caller's.
    from opentelemetry import propagate
    from opentelemetry.propagators.b3 import B3SingleFormat

    before = propagate.get_global_textmap()
    propagate.set_global_textmap(B3SingleFormat())
    try:
        with otlp_receiver() as receiver:
            provider = _provider(receiver)
            interceptor = RequestTracingInterceptor(tracer_provider=provider)
            _infer_once(proto, interceptor, (("b3", f"{CALLER_TRACE}-{CALLER_SPAN}-1"),))
            provider.force_flush()
            (span,) = receiver.wait_for(1)
            provider.shutdown()
    finally:
        propagate.set_global_textmap(before)
    assert (span.trace_id, span.parent_span_id) == (CALLER_TRACE, CALLER_SPAN)
    (end,) = log_lines.events("request.end")
    assert (end["trace_id"], end["parent_span_id"]) == (CALLER_TRACE, CALLER_SPAN)


def test_b3s_multiple_keys_are_read_whichever_b3_format_is_configured(
    proto: Proto, log_lines: LogLines
) -> None:
    # OpenTelemetry's b3 propagators read both B3 formats, and X-B3-Flags (debug, which
    # samples), but name only the keys they write as their fields: the interceptor
    # collected those alone, so a b3multi caller's debug flag was dropped (its trace
    # not sampled) and, under b3, a multi-key caller's trace was lost.
    from opentelemetry import propagate
    from opentelemetry.propagators.b3 import B3MultiFormat, B3SingleFormat

    before = propagate.get_global_textmap()
    cases = [(B3SingleFormat(), (("x-b3-traceid", CALLER_TRACE), ("x-b3-spanid", CALLER_SPAN),
                                 ("x-b3-sampled", "1"))),
             (B3MultiFormat(), (("x-b3-traceid", CALLER_TRACE), ("x-b3-spanid", CALLER_SPAN),
                                ("x-b3-flags", "1")))]
    try:
        with otlp_receiver() as receiver:
            provider = _provider(receiver)
            for propagator, metadata in cases:
                propagate.set_global_textmap(propagator)
                interceptor = RequestTracingInterceptor(tracer_provider=provider)
                _infer_once(proto, interceptor, metadata)
            provider.force_flush()
            spans = receiver.wait_for(2, timeout=10)
            provider.shutdown()
    finally:
        propagate.set_global_textmap(before)
    assert [(s.trace_id, s.parent_span_id) for s in spans] == [(CALLER_TRACE, CALLER_SPAN)] * 2
    assert [(e["trace_id"], e["parent_span_id"]) for e in log_lines.events("request.end")] == [
        (CALLER_TRACE, CALLER_SPAN)] * 2


def test_a_propagator_asking_for_its_key_in_mixed_case_finds_it(
    proto: Proto, log_lines: LogLines
) -> None:
    # Metadata keys arrive in lower case; X-Ray's propagator asks for X-Amzn-Trace-Id,
    # which an exact lookup never found: every X-Ray caller's call began a new trace.
    from opentelemetry import propagate

    before = propagate.get_global_textmap()
    propagate.set_global_textmap(XRayLikePropagator())
    try:
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        interceptor = RequestTracingInterceptor(tracer_provider=provider)
        _infer_once(proto, interceptor, (("x-amzn-trace-id", XRAY_HEADER),))
    finally:
        propagate.set_global_textmap(before)
    (span,) = exporter.get_finished_spans()
    assert span.parent is not None and f"{span.parent.span_id:016x}" == XRAY_PARENT
    (end,) = log_lines.events("request.end")
    assert (end["trace_id"], end["parent_span_id"]) == (XRAY_TRACE, XRAY_PARENT)


def test_propagators_none_reads_no_callers_trace_when_nothing_records(
    proto: Proto, log_lines: LogLines
) -> None:
    # OTEL_PROPAGATORS=none: OpenTelemetry's empty composite extracts None, which was
    # taken for "not extracted", and the call's lines then parsed the caller's
    # traceparent themselves: a caller's trace the service said not to trust.
    from opentelemetry import propagate
    from opentelemetry.propagators.composite import CompositePropagator

    before = propagate.get_global_textmap()
    propagate.set_global_textmap(CompositePropagator([]))
    try:
        ids = asyncio.run(_calls(proto, [RequestTracingInterceptor()]))
    finally:
        propagate.set_global_textmap(before)
    (end,) = [x for x in log_lines.events("request.end") if x["request_id"] == ids["unary"]]
    assert end["x_request_id"] == "corr-1"
    assert end["trace_id"] != CALLER_TRACE and "parent_span_id" not in end
