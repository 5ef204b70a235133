"""``echo_client_id`` on a synchronous ``grpc.server``'s handlers (plain ``def`` and
generator methods), the server docs/grpc.md serves the same interceptor on.

It refused them at import with ``TypeError: echo_client_id needs an async method``, so a
KServe-style service on the synchronous server could not echo its clients' ids.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
from google.protobuf.descriptor_pb2 import FieldDescriptorProto

from ridtrace.tracing.grpc import echo_client_id
from tests.tracing.grpc.conftest import LogLines, metadata_dict
from tests.tracing.grpc.test_grpc_sync_server import _wait_until, traced_sync_server

CALL_TIMEOUT = 30.0
Message = FieldDescriptorProto  # a real protobuf message; its ``name`` is the body id


@echo_client_id(field="name")
def _unary(request: Message, context: Any) -> Message:
    return Message(number=1)


@echo_client_id(field="name")
def _streaming(request: Message, context: Any) -> Iterator[Message]:
    yield Message(number=1)
    yield Message(number=2)


@echo_client_id(field="name")
def _chat(requests: Iterator[Message], context: Any) -> Iterator[Message]:
    for request in requests:
        yield Message(number=request.number)


_CODEC = {
    "request_deserializer": Message.FromString,
    "response_serializer": Message.SerializeToString,
}
_STUB_CODEC = {
    "request_serializer": Message.SerializeToString,
    "response_deserializer": Message.FromString,
}


def _add(server: grpc.Server) -> None:
    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(_unary, **_CODEC),
        "Stream": grpc.unary_stream_rpc_method_handler(_streaming, **_CODEC),
        "Chat": grpc.stream_stream_rpc_method_handler(_chat, **_CODEC),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("t.S", handlers),))


def test_synchronous_handlers_echo_their_requests_body_ids(log_lines: LogLines) -> None:
    with traced_sync_server(_add, workers=2) as channel:
        unary, call = channel.unary_unary("/t.S/Unary", **_STUB_CODEC).with_call(
            Message(name="body-unary"), timeout=CALL_TIMEOUT
        )
        streamed = list(channel.unary_stream("/t.S/Stream", **_STUB_CODEC)(
            Message(name="body-stream"), timeout=CALL_TIMEOUT
        ))
        asked = [Message(name=f"chat-{n}", number=n) for n in (1, 2)]
        chatted = list(channel.stream_stream("/t.S/Chat", **_STUB_CODEC)(
            iter(asked), timeout=CALL_TIMEOUT
        ))
    assert unary.name == "body-unary"
    assert [m.name for m in streamed] == ["body-stream", "body-stream"]
    assert [(m.name, m.number) for m in chatted] == [("chat-1", 1), ("chat-2", 2)]
    # Correlated as on grpc.aio: on the call's line and echoed in its metadata.
    assert metadata_dict(call.trailing_metadata())["x-request-id"] == ["body-unary"]
    _wait_until(lambda: bool(log_lines.events("request.end", rpc_method="/t.S/Unary")))
    (end,) = log_lines.events("request.end", rpc_method="/t.S/Unary")
    assert end["x_request_id"] == "body-unary"
