"""Client-controlled metadata: deprecated keys, and values built to hurt."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from datetime import UTC, datetime
from typing import Any

import grpc
import grpc.aio
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from ridtrace import configure_logging
from ridtrace.tracing.grpc import RequestTracingInterceptor
from ridtrace.tracing.grpc.status import NEVER_HANDLED_ERROR
from tests.tracing.grpc.conftest import LogLines, Proto, metadata_dict, serving
from tests.tracing.grpc.inference_service import build_servicer
from tests.tracing.grpc.raw_h2 import grpc_message, raw_unary_call

INFER = "/ridtrace.inference.v1.Inference/Infer"


def _add(proto: Proto, servicer: Any) -> Any:
    return lambda server: proto.pb2_grpc.add_InferenceServicer_to_server(servicer, server)


async def _infer(
    proto: Proto, interceptor: RequestTracingInterceptor,
    metadata: list[tuple[tuple[str, Any], ...]],
) -> list[tuple[Any, dict[str, list[Any]]]]:
    """One Infer call per entry of `metadata`, in order: each response, with its
    trailing metadata (empty when the call sent none)."""
    out = []
    async with (
        serving(_add(proto, build_servicer(proto)), interceptors=[interceptor]) as target,
        grpc.aio.insecure_channel(target) as channel,
    ):
        stub = proto.pb2_grpc.InferenceStub(channel)
        for sent in metadata:
            call = stub.Infer(proto.pb2.InferRequest(prompt="p"), metadata=sent or None)
            trailing = metadata_dict(await call.trailing_metadata()) if sent else {}
            out.append((await call, trailing))
    return out


def test_deprecated_keys_are_ignored_warned_once_and_recorded_per_call(
    proto: Proto, log_lines: LogLines
) -> None:
    interceptor = RequestTracingInterceptor(
        sunset_at=datetime(2027, 1, 1, tzinfo=UTC),
        deprecation_link="https://example.test/ids",
    )

    legacy = (("x-dynamo-request-id", "legacy-1"), ("request-id", "legacy-2"))
    results = asyncio.run(_infer(proto, interceptor, [legacy] * 3 + [()]))
    warnings = log_lines.events("deprecated_header")
    assert sorted(w["header"] for w in warnings) == ["request-id", "x-dynamo-request-id"]
    assert {w["level"] for w in warnings} == {"WARN"}
    for response, trailing in results[:3]:
        assert response.internal_request_id not in ("legacy-1", "legacy-2")
        assert trailing["link"] == ['<https://example.test/ids>; rel="deprecation"']
        assert "sunset" in trailing
    for name in ("request.start", "request.end"):
        lines = log_lines.events(name)
        assert [x.get("deprecated_headers") for x in lines] == [
            "x-dynamo-request-id,request-id"
        ] * 3 + [None]
        assert all("x_request_id" not in x for x in lines)


def test_binary_deprecated_keys_are_recorded_as_deprecated_and_never_the_id(
    proto: Proto, log_lines: LogLines
) -> None:
    """``request-id-bin`` is the deprecated ``request-id`` in gRPC's binary encoding:
    a client sending it still relies on the old id, so an audit must count it (and the
    one WARN per key name must name it) like the text key, and the call's id is
    minted all the same."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    interceptor = RequestTracingInterceptor(tracer_provider=provider)
    legacy = (("request-id-bin", b"legacy-1"), ("x-dynamo-request-id-bin", b"\x00\x01"))

    results = asyncio.run(_infer(proto, interceptor, [legacy] * 2))
    sent = "request-id-bin,x-dynamo-request-id-bin"
    warnings = log_lines.events("deprecated_header")
    assert sorted(w["header"] for w in warnings) == [
        "request-id-bin", "x-dynamo-request-id-bin"
    ]
    ids = [response.internal_request_id for response, _ in results]
    assert len(set(ids)) == 2 and "legacy-1" not in ids
    for request_id, (_, trailing) in zip(ids, results, strict=True):
        assert trailing["x-server-request-id"] == [request_id]
        for name in ("request.start", "request.end"):
            (line,) = log_lines.events(name, request_id=request_id)
            assert line["deprecated_headers"] == sent
            assert "x_request_id" not in line
    spans = [s for s in exporter.get_finished_spans() if s.attributes]
    assert sorted(str(s.attributes["request_id"]) for s in spans) == sorted(ids)
    assert {s.attributes["deprecated_headers"] for s in spans} == {sent}


def test_rejected_client_ids_are_flagged_and_the_call_is_served(
    proto: Proto, log_lines: LogLines
) -> None:
    cases: dict[str, tuple[tuple[str, Any], ...]] = {
        "too-long": (("x-request-id", "a" * 129),),
        "binary": (("x-request-id-bin", b'\n\x00{"forged": 1}\r\n'),),
        "first-valid-wins": (("x-request-id", "b" * 500), ("x-request-id", "good-one")),
    }

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    interceptor = RequestTracingInterceptor(tracer_provider=provider)

    async def go() -> dict[str, Any]:
        out = {}
        async with (
            serving(_add(proto, build_servicer(proto)), interceptors=[interceptor]) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            stub = proto.pb2_grpc.InferenceStub(channel)
            for name, metadata in cases.items():
                call = stub.Infer(proto.pb2.InferRequest(prompt=name), metadata=metadata)
                out[name] = (await call, metadata_dict(await call.trailing_metadata()))
        return out

    results = asyncio.run(go())
    starts = {x["request_id"]: x for x in log_lines.events("request.start")}
    for name, (response, trailing) in results.items():
        assert response.text == f"echo: {name}"
        start = starts[response.internal_request_id]
        assert start["x_request_id_rejected"] is True
        if name == "first-valid-wins":
            assert start["x_request_id"] == "good-one"
            assert trailing["x-request-id"] == ["good-one"]
        else:
            assert "x_request_id" not in start and "x-request-id" not in trailing
    # On the span too, as a refused body id is: Jaeger finds the hostile callers.
    spans = {str(s.attributes["request_id"]): s.attributes
             for s in exporter.get_finished_spans() if s.attributes}
    assert all(spans[response.internal_request_id].get("x_request_id_rejected") is True
               for response, _ in results.values())
    assert all(b"forged" not in raw or b'\\"forged' in raw for raw in log_lines.raw_lines)


def test_oversized_metadata_is_refused_by_grpc_and_the_server_keeps_serving(
    proto: Proto, log_lines: LogLines
) -> None:
    async def go() -> tuple[grpc.StatusCode, Any]:
        async with serving(
            _add(proto, build_servicer(proto)), interceptors=[RequestTracingInterceptor()]
        ) as target:
            async with grpc.aio.insecure_channel(target) as channel:
                stub = proto.pb2_grpc.InferenceStub(channel)
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await stub.Infer(
                        proto.pb2.InferRequest(prompt="big"),
                        metadata=(("x-request-id", "z" * (1 << 20)),),
                    )
            async with grpc.aio.insecure_channel(target) as channel:
                stub = proto.pb2_grpc.InferenceStub(channel)
                after = await stub.Infer(proto.pb2.InferRequest(prompt="after"))
        return refused.value.code(), after

    code, after = asyncio.run(go())
    # gRPC refuses it (over the 8 KiB soft limit) before the handler runs; the call
    # is recorded from what the interceptor saw, naming no status.
    assert code is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert after.text == "echo: after"
    refused_end, served_end = sorted(log_lines.events("request.end"),
                                     key=lambda x: "grpc_status" in x)
    assert (refused_end["path"], served_end["path"]) == (INFER, INFER)
    assert (refused_end["error"], served_end["grpc_status"]) == (NEVER_HANDLED_ERROR, "OK")
    # gRPC hands the interceptor the call without the oversized entry.
    assert len(log_lines.events("request.start", request_id=refused_end["request_id"])) == 1


@pytest.mark.parametrize(
    "value",
    [b"evil\r\nx-injected: 1", b"tab\there", b"nul\x00byte", b"caf\xc3\xa9", b"\x1b[31mred"],
    ids=["crlf", "tab", "nul", "utf8", "ansi"],
)
def test_control_characters_on_the_wire_never_reach_a_log_line(
    proto: Proto, log_lines: LogLines, value: bytes
) -> None:
    """Bytes grpcio's client would refuse, sent raw. grpcio's server lets them through
    to the interceptor (grpcio 1.85), so ridtrace's validation is all that stands
    between them and a log line: the id is rejected and the call served."""

    async def go() -> tuple[Any, Any]:
        async with serving(
            _add(proto, build_servicer(proto)), interceptors=[RequestTracingInterceptor()]
        ) as target:
            host, port = target.rsplit(":", 1)
            request = proto.pb2.InferRequest(prompt="raw").SerializeToString()
            reply = await raw_unary_call(
                host, int(port), INFER, request, [(b"x-request-id", value)]
            )
            async with grpc.aio.insecure_channel(target) as channel:
                after = await proto.pb2_grpc.InferenceStub(channel).Infer(
                    proto.pb2.InferRequest(prompt="after")
                )
        return reply, after

    reply, after = asyncio.run(go())
    assert after.text == "echo: after"  # the server is alive either way
    assert reply.ended and not reply.reset
    assert proto.pb2.InferResponse.FromString(grpc_message(reply.data)).text == "echo: raw"
    starts = log_lines.events("request.start")
    assert [x.get("x_request_id_rejected") for x in starts] == [True, None]
    assert all("x_request_id" not in x for x in starts)
    assert all(value not in raw for raw in log_lines.raw_lines)


def test_a_tracestate_sent_in_two_entries_is_one_list(proto: Proto, log_lines: LogLines) -> None:
    """Repeated metadata is combined as HTTP combines repeated fields (RFC 9110 5.3), as
    the W3C test suite expects of tracestate: the second entry was dropped. (A second
    ``traceparent`` never reaches an interceptor: gRPC's core keeps the last one.)"""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    caller = "00-12345678901234567890123456789011-1234567890123456-01"
    sent = (("traceparent", caller), ("tracestate", "foo=1"), ("tracestate", "bar=2"))
    ((response, _),) = asyncio.run(
        _infer(proto, RequestTracingInterceptor(tracer_provider=provider), [sent])
    )
    (span,) = [s for s in exporter.get_finished_spans()
               if s.attributes and s.attributes["request_id"] == response.internal_request_id]
    assert format(span.context.trace_id, "032x") == "12345678901234567890123456789011"
    assert span.context.trace_state.to_header() == "foo=1,bar=2"


def test_a_baggage_of_many_bad_entries_is_one_warning_with_the_calls_ids(proto: Proto) -> None:
    """OpenTelemetry's baggage propagator warns once per entry it drops: one call's
    metadata wrote 181 WARN lines, none naming the call."""
    lines = LogLines()
    configure_logging(lines, service="grpc-test", level="INFO", intercept_stdlib=True)
    try:
        ((response, _),) = asyncio.run(_infer(
            proto, RequestTracingInterceptor(), [(("baggage", ",".join(["x"] * 300)),)]
        ))
    finally:
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)
    warned = [x for x in lines.lines if x["logger"] == "opentelemetry.baggage.propagation"]
    assert [(x["request_id"], x["message"]) for x in warned] == [(
        response.internal_request_id,
        "Baggage list-member `x` doesn't match the format (and 180 more warnings about "
        "this request's trace headers, not written)",
    )]


def test_metadata_that_is_not_utf8_is_logged_by_grpc_with_the_calls_ids(proto: Proto) -> None:
    """grpc.aio decodes the metadata again each time it is asked for, logging an ERROR
    (with a traceback) per value that is not UTF-8. ridtrace's own read came before the
    call's context was current: a line without the ids, beside gRPC's own (written
    before any interceptor runs, which no interceptor can help)."""
    lines = LogLines()
    configure_logging(lines, service="grpc-test", level="INFO", intercept_stdlib=True)

    async def go() -> None:
        async with serving(
            _add(proto, build_servicer(proto)), interceptors=[RequestTracingInterceptor()]
        ) as target:
            host, port = target.rsplit(":", 1)
            request = proto.pb2.InferRequest(prompt="raw").SerializeToString()
            reply = await raw_unary_call(host, int(port), INFER, request,
                                         [(b"x-request-id", b"\xff\xfe")])
            assert reply.ended and not reply.reset

    try:
        asyncio.run(go())
    finally:
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)
    (start,) = [x for x in lines.lines if x.get("event") == "request.start"]
    assert start["x_request_id_rejected"] is True
    decoding = [x for x in lines.lines if x["message"].startswith("Invalid encoding")]
    assert decoding, "grpcio no longer logs undecodable metadata: drop this test"
    # gRPC's own line, from before any interceptor ran, is the only one without ids.
    assert [x.get("request_id") for x in decoding[1:]] == [start["request_id"]] * (
        len(decoding) - 1)


def _when_written(
    log_lines: LogLines, event: str, *, count: int = 1, **match: Any
) -> list[dict[str, Any]]:
    """The lines, once ``count`` of them are written: the client has its status before
    the synchronous server's handler thread is done with the call."""
    deadline = time.monotonic() + 10
    while len(lines := log_lines.events(event, **match)) < count:
        assert time.monotonic() < deadline, f"fewer than {count} {event} lines"
        time.sleep(0.01)
    return lines


@pytest.mark.parametrize("shape", ["client_stream", "bidi"])
def test_a_request_message_grpc_cannot_decode_is_recorded_as_the_internal_the_client_got(
    proto: Proto, log_lines: LogLines, shape: str
) -> None:
    """On a synchronous server gRPC answers such a message ``INTERNAL`` itself and just
    ends the handler's request iterator; the call was recorded ``CANCELLED`` /
    ``cancelled``, as if the client had gone away, though the client got an error."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    pb2 = proto.pb2

    def collect(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
        return pb2.InferResponse(text=",".join(r.prompt for r in requests))

    def chat(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        for r in requests:
            yield pb2.InferResponse(text=r.prompt)

    handlers = grpc.method_handlers_generic_handler("ridtrace.inference.v1.Inference", {
        "InferCollect": grpc.stream_unary_rpc_method_handler(
            collect, pb2.InferRequest.FromString, pb2.InferResponse.SerializeToString),
        "InferChat": grpc.stream_stream_rpc_method_handler(
            chat, pb2.InferRequest.FromString, pb2.InferResponse.SerializeToString),
    })
    server = grpc.server(futures.ThreadPoolExecutor(2),
                         interceptors=[RequestTracingInterceptor(tracer_provider=provider)])
    server.add_generic_rpc_handlers((handlers,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    # Raw bytes: a good message, then one that is no InferRequest (a field with no value).
    sent = [pb2.InferRequest(prompt="fine").SerializeToString(), b"\x12\xff"]
    metadata = (("x-request-id", "undecodable"),)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel, \
                pytest.raises(grpc.RpcError) as refused:
            if shape == "client_stream":
                channel.stream_unary("/ridtrace.inference.v1.Inference/InferCollect")(
                    iter(sent), metadata=metadata, timeout=10)
            else:
                list(channel.stream_stream("/ridtrace.inference.v1.Inference/InferChat")(
                    iter(sent), metadata=metadata, timeout=10))
    finally:
        server.stop(None).wait(10)
    assert refused.value.code() is grpc.StatusCode.INTERNAL
    (end,) = _when_written(log_lines, "request.end", stream_index=None)
    assert end["x_request_id"] == "undecodable"
    assert (end["grpc_status"], end["status"], end["outcome"], end["level"]) == (
        "INTERNAL", 13, "error", "WARN")
    assert end["error"] == "gRPC could not deserialize a request message"
    assert end["messages_in"] == 1
    # The status gRPC sent carries the call's ids: the client can name the call.
    trailing = metadata_dict(refused.value.trailing_metadata())
    assert trailing["x-server-request-id"] == [end["request_id"]]
    (span,) = [s for s in exporter.get_finished_spans()
               if s.attributes and s.attributes["request_id"] == end["request_id"]]
    assert span.attributes["rpc.grpc.status_code"] == 13
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "INTERNAL" and not span.events


def _unary_handlers(pb2: Any, *, aio: bool) -> Any:
    """Infer and InferStream, the servicer's answers plain (synchronous) or async."""
    def infer(request: Any, context: Any) -> Any:
        return pb2.InferResponse(text=request.prompt)

    def infer_stream(request: Any, context: Any) -> Iterator[Any]:
        yield pb2.InferResponse(text=request.prompt)

    async def infer_aio(request: Any, context: Any) -> Any:
        return infer(request, context)

    async def infer_stream_aio(request: Any, context: Any) -> Any:
        yield pb2.InferResponse(text=request.prompt)

    decode, encode = pb2.InferRequest.FromString, pb2.InferResponse.SerializeToString
    return grpc.method_handlers_generic_handler("ridtrace.inference.v1.Inference", {
        "Infer": grpc.unary_unary_rpc_method_handler(
            infer_aio if aio else infer, decode, encode),
        "InferStream": grpc.unary_stream_rpc_method_handler(
            infer_stream_aio if aio else infer_stream, decode, encode),
    })


def _call_unary(channel: Any, method: str, data: bytes, metadata: Any) -> Any:
    """A synchronous channel's call with raw request bytes; what it raised, or its reply."""
    try:
        if method.endswith("/Infer"):
            return channel.unary_unary(method)(data, metadata=metadata, timeout=10)
        return list(channel.unary_stream(method)(data, metadata=metadata, timeout=10))
    except grpc.RpcError as exc:
        return exc


@pytest.mark.parametrize("server_kind", ["sync", "aio"])
@pytest.mark.parametrize("method", [INFER, "/ridtrace.inference.v1.Inference/InferStream"])
def test_a_unary_request_grpc_cannot_decode_gets_grpcs_answer_with_an_id_and_lines(
    proto: Proto, log_lines: LogLines, server_kind: str, method: str
) -> None:
    """gRPC deserializes a unary request before any handler runs and answers a failure
    itself: the call had no request_id (not even in its status), no request.start /
    request.end and no span, and gRPC's error line named no request."""
    pb2 = proto.pb2
    handlers = _unary_handlers(pb2, aio=server_kind == "aio")
    metadata = (("x-request-id", "undecodable-unary"),)
    bad = b"\x12\xff"  # field 2 (prompt) with a length and no bytes
    good = pb2.InferRequest(prompt="after").SerializeToString()

    def calls(target: str) -> tuple[Any, Any]:
        with grpc.insecure_channel(target) as channel:
            return (_call_unary(channel, method, bad, metadata),
                    _call_unary(channel, method, good, None))

    if server_kind == "sync":
        server = grpc.server(futures.ThreadPoolExecutor(2),
                             interceptors=[RequestTracingInterceptor()])
        server.add_generic_rpc_handlers((handlers,))
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        try:
            refused, after = calls(f"127.0.0.1:{port}")
        finally:
            server.stop(None).wait(10)
    else:
        async def go() -> tuple[Any, Any]:
            async with serving(lambda server: server.add_generic_rpc_handlers((handlers,)),
                               interceptors=[RequestTracingInterceptor()]) as target:
                return await asyncio.to_thread(calls, target)
        refused, after = asyncio.run(go())

    # What gRPC answers without ridtrace (checked by hand against grpcio 1.85).
    assert isinstance(refused, grpc.RpcError), refused
    if server_kind == "sync":
        assert (refused.code(), refused.details()) == (
            grpc.StatusCode.INTERNAL, "Exception deserializing request!")
    else:
        assert refused.code() is grpc.StatusCode.UNKNOWN
        assert refused.details().startswith("Unexpected <class 'google.protobuf.")
    assert "after" in str(after)  # the server is serving
    ends = log_lines.events("request.end", x_request_id="undecodable-unary")
    (end,) = ends
    trailing = metadata_dict(refused.trailing_metadata())
    assert trailing["x-server-request-id"] == [end["request_id"]]
    assert (end["grpc_status"], end["outcome"], end["level"]) == (
        refused.code().name, "error", "WARN")
    assert end["error"] == "gRPC could not deserialize a request message (DecodeError)"
    assert [x["request_id"] for x in log_lines.events(
        "request.start", x_request_id="undecodable-unary")] == [end["request_id"]]


def test_a_synchronous_server_that_refused_undecodable_messages_still_stops(
    proto: Proto, log_lines: LogLines
) -> None:
    """After gRPC answered a refused message, grpcio's synchronous server still sends
    the status of the handler's result (a client stream's) and ridtrace's initial
    metadata (a response stream's), in batches gRPC's core refuses and never completes:
    the call was never finished, and ``server.stop()`` waited for it forever (about one
    call in four to one in three left so; 20 calls of each shape here)."""
    pb2 = proto.pb2

    def collect(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
        return pb2.InferResponse(text=",".join(r.prompt for r in requests))

    def chat(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        prompts = [r.prompt for r in requests]  # all read before the first answer
        for prompt in prompts:
            yield pb2.InferResponse(text=prompt)

    decode, encode = pb2.InferRequest.FromString, pb2.InferResponse.SerializeToString
    handlers = grpc.method_handlers_generic_handler("ridtrace.inference.v1.Inference", {
        "InferCollect": grpc.stream_unary_rpc_method_handler(collect, decode, encode),
        "InferChat": grpc.stream_stream_rpc_method_handler(chat, decode, encode),
    })
    server = grpc.server(futures.ThreadPoolExecutor(2),
                         interceptors=[RequestTracingInterceptor()])
    server.add_generic_rpc_handlers((handlers,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    sent = [pb2.InferRequest(prompt="fine").SerializeToString(), b"\x12\xff"]
    codes = set()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        collect_call = channel.stream_unary("/ridtrace.inference.v1.Inference/InferCollect")
        chat_call = channel.stream_stream("/ridtrace.inference.v1.Inference/InferChat")
        for _ in range(20):
            for call in (lambda: collect_call(iter(sent), timeout=10),
                         lambda: list(chat_call(iter(sent), timeout=10))):
                with pytest.raises(grpc.RpcError) as refused:
                    call()
                codes.add(refused.value.code())
    assert codes == {grpc.StatusCode.INTERNAL}
    stopper = threading.Thread(target=lambda: server.stop(None).wait(), daemon=True)
    stopper.start()
    stopper.join(10)  # a daemon thread: a server that never stops fails, not hangs, the test
    assert not stopper.is_alive(), "server.stop() never returned"
    ends = _when_written(log_lines, "request.end", count=40, stream_index=None)
    assert len(ends) == 40 and {x["grpc_status"] for x in ends} == {"INTERNAL"}


def test_a_handler_crash_after_a_refused_message_is_logged_with_the_calls_ids(
    proto: Proto,
) -> None:
    """The handler raises once its request stream ended short. The call is recorded as
    the INTERNAL the client got, and gRPC still logs the handler's exception
    ("Exception calling application"), after the call's context is gone: that line
    named no request, where a crash in any other call carries its ids."""
    lines = LogLines()
    configure_logging(lines, service="grpc-test", level="INFO", intercept_stdlib=True)
    pb2 = proto.pb2

    def collect(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
        prompts = [r.prompt for r in requests]
        if len(prompts) < 2:
            raise RuntimeError("the stream ended short")
        return pb2.InferResponse(text=",".join(prompts))

    handlers = grpc.method_handlers_generic_handler("ridtrace.inference.v1.Inference", {
        "InferCollect": grpc.stream_unary_rpc_method_handler(
            collect, pb2.InferRequest.FromString, pb2.InferResponse.SerializeToString),
    })
    server = grpc.server(futures.ThreadPoolExecutor(2),
                         interceptors=[RequestTracingInterceptor()])
    server.add_generic_rpc_handlers((handlers,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    sent = [pb2.InferRequest(prompt="fine").SerializeToString(), b"\x12\xff"]
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel, \
                pytest.raises(grpc.RpcError) as refused:
            channel.stream_unary("/ridtrace.inference.v1.Inference/InferCollect")(
                iter(sent), metadata=(("x-request-id", "crash-after-refusal"),), timeout=10)
        (end,) = _when_written(lines, "request.end")
        deadline = time.monotonic() + 10
        while not (crashed := [x for x in lines.lines
                               if x["message"].startswith("Exception calling application")]):
            assert time.monotonic() < deadline, "gRPC logged no crash"
            time.sleep(0.01)
    finally:
        server.stop(None).wait(10)
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)
    assert refused.value.code() is grpc.StatusCode.INTERNAL
    assert end["grpc_status"] == "INTERNAL" and end["x_request_id"] == "crash-after-refusal"
    assert [(x.get("request_id"), x.get("x_request_id")) for x in crashed] == [
        (end["request_id"], "crash-after-refusal")]
