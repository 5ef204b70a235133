"""``echo_client_id`` on a method whose id field is a number echoes it and serves the call.

The decorator offered the body id for correlation (``x_request_id``) unchecked for its
type, and the header check takes text: an ``int64 id`` made every call with a non-zero
id fail ``UNKNOWN`` ("object of type 'int' has no len()"). The interceptor's own
per-request ids in a request stream read text ids only; the decorator now does the same.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import grpc.aio
from google.protobuf.descriptor_pb2 import FieldDescriptorProto

from ridtrace.tracing.grpc import RequestTracingInterceptor, echo_client_id
from tests.tracing.grpc.conftest import LogLines, service_of, serving

CALL_TIMEOUT = 30.0


# A real protobuf message with an integer field to stand for an ``int64 id``.
@echo_client_id(field="number")
async def _answer(request: FieldDescriptorProto, context: Any) -> FieldDescriptorProto:
    return FieldDescriptorProto(name="answer")


def test_a_numeric_body_id_is_echoed_and_the_call_served(log_lines: LogLines) -> None:
    handler = grpc.unary_unary_rpc_method_handler(
        _answer,
        request_deserializer=FieldDescriptorProto.FromString,
        response_serializer=FieldDescriptorProto.SerializeToString,
    )

    async def run() -> FieldDescriptorProto:
        async with (
            serving(service_of({"Answer": handler}),
                    interceptors=[RequestTracingInterceptor()]) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            call = channel.unary_unary(
                "/t.S/Answer",
                request_serializer=FieldDescriptorProto.SerializeToString,
                response_deserializer=FieldDescriptorProto.FromString,
            )
            response: FieldDescriptorProto = await call(
                FieldDescriptorProto(number=7), timeout=CALL_TIMEOUT
            )
            await log_lines.wait_for(lambda lines: bool(lines.events("request.end")))
            return response

    response = asyncio.run(run())
    assert (response.name, response.number) == ("answer", 7)
    (end,) = log_lines.events("request.end")
    assert (end["grpc_status"], end["outcome"]) == ("OK", "ok")
    assert "x_request_id" not in end and "x_request_id_rejected" not in end
