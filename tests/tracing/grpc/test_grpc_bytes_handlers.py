"""Handlers without serializers (raw bytes in and out, as docs/grpc.md's examples are
written, and as proxies are) on a synchronous ``grpc.server``: a ``None`` they return
or yield is no message, and gRPC answers it in its own way, which ridtrace records.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, metadata_dict

CALL_TIMEOUT = 10.0


@pytest.fixture
def channel() -> Iterator[grpc.Channel]:
    def forgot(request: bytes, context: Any) -> None:
        return None  # a forgotten return

    def chunks(request: bytes, context: Any) -> Iterator[bytes | None]:
        yield b"first"
        yield None  # to a synchronous server: the end of the stream
        yield b"never sent"

    class Raw(bytes):
        """A bytes subclass: grpc's C code takes exactly bytes."""

    def answer(request: bytes, context: Any) -> Any:
        kind, _, code = request.decode().partition("+")
        if code:  # a status set first changes nothing: the server never answers
            context.set_code(grpc.StatusCode.NOT_FOUND)
        return {"dict": {"a": 1}, "text": "text", "bytearray": bytearray(b"x"),
                "subclass": Raw(b"x")}[kind]

    def counts(request: bytes, context: Any) -> Iterator[Any]:
        yield b"first"
        yield 42

    methods = {
        "Forgot": grpc.unary_unary_rpc_method_handler(forgot),
        "Chunks": grpc.unary_stream_rpc_method_handler(chunks),
        "Answer": grpc.unary_unary_rpc_method_handler(answer),
        "Counts": grpc.unary_stream_rpc_method_handler(counts),
    }
    pool = futures.ThreadPoolExecutor(2)
    server = grpc.server(pool, interceptors=[RequestTracingInterceptor()])
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("raw.Bytes", methods),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as opened:
            yield opened
    finally:
        stopper = threading.Thread(target=server.stop, args=(None,), daemon=True)
        stopper.start()
        stopper.join(CALL_TIMEOUT)
        pool.shutdown(wait=False, cancel_futures=True)


def test_a_bytes_handler_returning_none_is_recorded_as_the_client_got_it(
    channel: grpc.Channel, log_lines: LogLines
) -> None:
    with pytest.raises(grpc.RpcError) as failed:
        channel.unary_unary("/raw.Bytes/Forgot")(b"", timeout=CALL_TIMEOUT)
    assert failed.value.code() is grpc.StatusCode.INTERNAL
    assert failed.value.details() == "Failed to serialize response!"
    [server_id] = metadata_dict(failed.value.trailing_metadata())["x-server-request-id"]
    [end] = log_lines.events("request.end", request_id=server_id)
    # Was OK / ok, messages_out 1: only a serializer's refusal was looked for.
    assert (end["grpc_status"], end["outcome"], end["level"]) == ("INTERNAL", "error", "WARN")
    assert end["messages_out"] == 0 and "returned None" in end["error"]


def test_a_stream_yielding_none_ends_ok_there_as_without_ridtrace(
    channel: grpc.Channel, log_lines: LogLines
) -> None:
    call = channel.unary_stream("/raw.Bytes/Chunks")(b"", timeout=CALL_TIMEOUT)
    assert list(call) == [b"first"]
    assert call.code() is grpc.StatusCode.OK
    [server_id] = metadata_dict(call.trailing_metadata())["x-server-request-id"]
    [end] = log_lines.events("request.end", request_id=server_id)
    # Was CANCELLED / cancelled, messages_out 2: the wrapper handed gRPC the None and
    # was abandoned, as a client's cancel leaves it.
    assert (end["grpc_status"], end["outcome"], end["messages_out"]) == ("OK", "ok", 1)


def test_a_stream_yielding_none_is_not_failed_by_its_serializer(log_lines: LogLines) -> None:
    """With a serializer, ridtrace asked it about the None and answered INTERNAL where
    the server without ridtrace ends the call OK."""

    def chunks(request: bytes, context: Any) -> Iterator[bytes | None]:
        yield b"first"
        yield None

    handler = grpc.unary_stream_rpc_method_handler(chunks, response_serializer=bytes)
    pool = futures.ThreadPoolExecutor(2)
    server = grpc.server(pool, interceptors=[RequestTracingInterceptor()])
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("raw.Bytes", {"Chunks": handler}),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = channel.unary_stream("/raw.Bytes/Chunks")(b"", timeout=CALL_TIMEOUT)
            assert list(call) == [b"first"]
            assert call.code() is grpc.StatusCode.OK
    finally:
        server.stop(None)
        pool.shutdown(wait=False, cancel_futures=True)
    [end] = log_lines.events("request.end", rpc_method="/raw.Bytes/Chunks")
    assert (end["grpc_status"], end["outcome"], end["messages_out"]) == ("OK", "ok", 1)


@pytest.mark.parametrize(("value", "named"), [
    ("dict", "a dict"), ("text", "a str"), ("bytearray", "a bytearray"), ("subclass", "a channel.<locals>.Raw"),
    ("dict+code", "a dict")])
def test_a_bytes_handler_returning_no_bytes_is_answered_not_left_hanging(
    channel: grpc.Channel, log_lines: LogLines, value: str, named: str,
) -> None:
    # grpc's synchronous server raises over such a value in its own thread and never
    # answers: the client waited for its deadline, and the call was recorded OK / ok.
    with pytest.raises(grpc.RpcError) as failed:
        channel.unary_unary("/raw.Bytes/Answer")(value.encode(), timeout=CALL_TIMEOUT)
    assert failed.value.code() is grpc.StatusCode.INTERNAL
    assert failed.value.details() == "Failed to serialize response!"
    [server_id] = metadata_dict(failed.value.trailing_metadata())["x-server-request-id"]
    [end] = log_lines.events("request.end", request_id=server_id)
    assert (end["grpc_status"], end["outcome"], end["messages_out"]) == ("INTERNAL", "error", 0)
    assert f"returned {named}" in end["error"]


def test_a_bytes_stream_yielding_no_bytes_is_answered_not_left_hanging(
    channel: grpc.Channel, log_lines: LogLines
) -> None:
    # Recorded CANCELLED / cancelled while the client waited for its deadline.
    call = channel.unary_stream("/raw.Bytes/Counts")(b"", timeout=CALL_TIMEOUT)
    got = []
    with pytest.raises(grpc.RpcError) as failed:
        for message in call:
            got.append(message)
    assert got == [b"first"] and failed.value.code() is grpc.StatusCode.INTERNAL
    [server_id] = metadata_dict(call.trailing_metadata())["x-server-request-id"]
    [end] = log_lines.events("request.end", request_id=server_id)
    assert (end["grpc_status"], end["outcome"], end["messages_out"]) == ("INTERNAL", "error", 1)
    assert "yielded an int" in end["error"]
