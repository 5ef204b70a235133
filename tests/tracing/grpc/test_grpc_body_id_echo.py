"""A client id the handler learns from the body is echoed in metadata, as over HTTP.

``echo_client_id`` (and ``correlate_client_id``) adopt a request's body id as the call's
``x_request_id`` when the metadata carried none, as ``/inference/v1/generate`` adopts its
body ``request_id``. Over HTTP that id is echoed as ``x-request-id`` (the response
headers are read when the response starts); over gRPC the metadata was fixed when the
call began, so the client got only ``x-server-request-id`` back, while every log line and
the span named the body id: nothing the client held matched the lines it could search.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import grpc.aio
from google.protobuf.descriptor_pb2 import FieldDescriptorProto

from ridtrace.tracing.grpc import (
    RequestTracingInterceptor,
    correlate_client_id,
    echo_client_id,
)
from tests.tracing.grpc.conftest import LogLines, metadata_dict, service_of, serving

CALL_TIMEOUT = 30.0
Message = FieldDescriptorProto  # a real protobuf message; its ``name`` is the body id


@echo_client_id(field="name")
async def _unary(request: Message, context: Any) -> Message:
    # The handler's own x-request-id is replaced by the echo, as over HTTP.
    context.set_trailing_metadata((("x-request-id", "handlers-own"), ("kept", "yes")))
    return Message(number=1)


@echo_client_id(field="name")
async def _streaming(request: Message, context: Any) -> Any:
    yield Message(number=1)
    yield Message(number=2)


def _sync_unary(request: Message, context: Any) -> Message:
    correlate_client_id(request.name)
    return Message(name=request.name)


def _handlers(unary: Any, streaming: Any = None) -> Any:
    codec = {
        "request_deserializer": Message.FromString,
        "response_serializer": Message.SerializeToString,
    }
    handlers = {"Unary": grpc.unary_unary_rpc_method_handler(unary, **codec)}
    if streaming is not None:
        handlers["Stream"] = grpc.unary_stream_rpc_method_handler(streaming, **codec)
    return service_of(handlers)


def _stub(channel: Any, kind: str) -> Any:
    make = channel.unary_unary if kind == "Unary" else channel.unary_stream
    return make(
        f"/t.S/{kind}",
        request_serializer=Message.SerializeToString,
        response_deserializer=Message.FromString,
    )


def test_a_body_id_learnt_by_a_grpc_aio_handler_is_echoed(log_lines: LogLines) -> None:
    async def run() -> tuple[Any, Any, Any]:
        async with (
            serving(_handlers(_unary, _streaming),
                    interceptors=[RequestTracingInterceptor()]) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            unary = _stub(channel, "Unary")(Message(name="body-unary"), timeout=CALL_TIMEOUT)
            await unary
            stream = _stub(channel, "Stream")(Message(name="body-stream"), timeout=CALL_TIMEOUT)
            first = None
            async for _message in stream:
                # Initial metadata goes out with the first message: it has the echo.
                first = first or await stream.initial_metadata()
            await log_lines.wait_for(lambda lines: len(lines.events("request.end")) == 2)
            return await unary.trailing_metadata(), first, await stream.trailing_metadata()

    unary_trailing, stream_initial, stream_trailing = asyncio.run(run())
    assert metadata_dict(unary_trailing)["x-request-id"] == ["body-unary"]
    assert metadata_dict(unary_trailing)["kept"] == ["yes"]
    assert metadata_dict(stream_initial)["x-request-id"] == ["body-stream"]
    assert metadata_dict(stream_trailing)["x-request-id"] == ["body-stream"]
    ends = {end["x_request_id"] for end in log_lines.events("request.end")}
    assert ends == {"body-unary", "body-stream"}


def test_a_body_id_a_synchronous_handler_correlates_is_echoed(log_lines: LogLines) -> None:
    server = grpc.server(
        ThreadPoolExecutor(2), interceptors=[RequestTracingInterceptor()]
    )
    _handlers(_sync_unary)(server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            answer, call = _stub(channel, "Unary").with_call(
                Message(name=" body-sync\t "), timeout=CALL_TIMEOUT
            )
    finally:
        server.stop(None)
    # Stripped as a header's value is: one spelling of the id on the lines and in the
    # metadata (a padded value, which HTTP/2 forbids, was echoed), the body its own.
    assert metadata_dict(call.trailing_metadata())["x-request-id"] == ["body-sync"]
    assert answer.name == " body-sync\t "
    (end,) = log_lines.events("request.end")
    assert end["x_request_id"] == "body-sync"
