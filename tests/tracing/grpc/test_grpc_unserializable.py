"""A unary handler that returns ``None`` (a forgotten ``return``), or a value that is
no message of its method (a ``dict``): gRPC fails the call after the handler returned, ``UNKNOWN`` on grpc.aio and ``INTERNAL`` on a synchronous
server. Before, ridtrace had already recorded it ``OK`` / ``ok``: no WARN, no error
span, and gRPC's own ERROR line about it carried no request id. The client's answer is
unchanged; a code the handler set before returning is still what both answer.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent import futures
from typing import Any

import grpc
import grpc.aio
import pytest

from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, Proto, metadata_dict, serving

CALL_TIMEOUT = 10.0


def _handlers(proto: Proto, aio: bool) -> grpc.GenericRpcHandler:
    def forgot(request: Any, context: Any) -> None:
        return None

    def wrong_type(request: Any, context: Any) -> Any:
        return {"text": "a dict, not an InferResponse"}

    def not_found(request: Any, context: Any) -> None:
        context.set_code(grpc.StatusCode.NOT_FOUND)
        context.set_details("no such model")

    async def forgot_aio(request: Any, context: Any) -> None:
        return forgot(request, context)

    async def wrong_type_aio(request: Any, context: Any) -> Any:
        return wrong_type(request, context)

    async def not_found_aio(request: Any, context: Any) -> None:
        return not_found(request, context)

    methods = {"Forgot": forgot_aio, "WrongType": wrong_type_aio, "NotFound": not_found_aio} if aio else {
        "Forgot": forgot, "WrongType": wrong_type, "NotFound": not_found}
    return grpc.method_handlers_generic_handler(
        "probe.None",
        {
            name: grpc.unary_unary_rpc_method_handler(
                behavior,
                request_deserializer=proto.pb2.InferRequest.FromString,
                response_serializer=proto.pb2.InferResponse.SerializeToString,
            )
            for name, behavior in methods.items()
        },
    )


def _aio(proto: Proto) -> dict[str, grpc.RpcError]:
    async def run() -> dict[str, grpc.RpcError]:
        failures = {}
        async with (
            serving(
                lambda s: s.add_generic_rpc_handlers((_handlers(proto, True),)),
                interceptors=[RequestTracingInterceptor()],
            ) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            for name in ("Forgot", "WrongType", "NotFound"):
                method = channel.unary_unary(
                    f"/probe.None/{name}",
                    request_serializer=proto.pb2.InferRequest.SerializeToString,
                )
                with pytest.raises(grpc.aio.AioRpcError) as failed:
                    await method(proto.pb2.InferRequest(), timeout=CALL_TIMEOUT)
                failures[name] = failed.value
        return failures

    return asyncio.run(run())


def _sync(proto: Proto) -> dict[str, grpc.RpcError]:
    pool = futures.ThreadPoolExecutor(2)
    server = grpc.server(pool, interceptors=[RequestTracingInterceptor()])
    server.add_generic_rpc_handlers((_handlers(proto, False),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    failures = {}
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            for name in ("Forgot", "WrongType", "NotFound"):
                method = channel.unary_unary(
                    f"/probe.None/{name}",
                    request_serializer=proto.pb2.InferRequest.SerializeToString,
                )
                with pytest.raises(grpc.RpcError) as failed:
                    method(proto.pb2.InferRequest(), timeout=CALL_TIMEOUT)
                failures[name] = failed.value
    finally:
        stopper = threading.Thread(target=server.stop, args=(None,), daemon=True)
        stopper.start()
        stopper.join(CALL_TIMEOUT)
        pool.shutdown(wait=False, cancel_futures=True)
    return failures


@pytest.mark.parametrize(
    ("serve", "code", "details"),
    [
        (_aio, grpc.StatusCode.UNKNOWN, "Unexpected <class '"),  # the serializer's error
        (_sync, grpc.StatusCode.INTERNAL, "Failed to serialize response!"),
    ],
    ids=["aio", "sync"],
)
def test_a_unary_handler_returning_none_is_recorded_as_the_client_got_it(
    proto: Proto, log_lines: LogLines, serve: Any, code: grpc.StatusCode, details: str
) -> None:
    failures = serve(proto)
    forgot = failures["Forgot"]
    assert forgot.code() is code and forgot.details().startswith(details)
    [server_id] = metadata_dict(forgot.trailing_metadata())["x-server-request-id"]
    [end] = log_lines.events("request.end", request_id=server_id)
    assert (end["grpc_status"], end["outcome"], end["level"]) == (code.name, "error", "WARN")
    assert end["messages_out"] == 0 and "returned None" in end["error"]
    # The same for a value its serializer refuses (recorded OK / ok before).
    wrong = failures["WrongType"]
    assert wrong.code() is code and wrong.details().startswith(details)
    [server_id] = metadata_dict(wrong.trailing_metadata())["x-server-request-id"]
    [end] = log_lines.events("request.end", request_id=server_id)
    assert (end["grpc_status"], end["outcome"], end["level"]) == (code.name, "error", "WARN")
    assert end["messages_out"] == 0 and "returned a dict" in end["error"]
    # The status the handler set is what the client got, and what is recorded.
    not_found = failures["NotFound"]
    assert not_found.code() is grpc.StatusCode.NOT_FOUND
    assert not_found.details() == "no such model"
    [end] = log_lines.events("request.end", rpc_method="/probe.None/NotFound")
    assert (end["grpc_status"], end["outcome"]) == ("NOT_FOUND", "ok")


def _stream_handlers(proto: Proto, aio: bool) -> grpc.GenericRpcHandler:
    def chunks(request: Any, context: Any) -> Any:
        yield proto.pb2.InferResponse(text="first")
        yield {"text": "a dict, not an InferResponse"}

    async def chunks_aio(request: Any, context: Any) -> Any:
        for chunk in chunks(request, context):
            yield chunk

    return grpc.method_handlers_generic_handler(
        "probe.None",
        {
            "Chunks": grpc.unary_stream_rpc_method_handler(
                chunks_aio if aio else chunks,
                request_deserializer=proto.pb2.InferRequest.FromString,
                response_serializer=proto.pb2.InferResponse.SerializeToString,
            )
        },
    )


def _stream_aio(proto: Proto) -> tuple[list[str], grpc.RpcError]:
    async def run() -> tuple[list[str], grpc.RpcError]:
        async with (
            serving(
                lambda s: s.add_generic_rpc_handlers((_stream_handlers(proto, True),)),
                interceptors=[RequestTracingInterceptor()],
            ) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            call = channel.unary_stream(
                "/probe.None/Chunks",
                request_serializer=proto.pb2.InferRequest.SerializeToString,
                response_deserializer=proto.pb2.InferResponse.FromString,
            )(proto.pb2.InferRequest(), timeout=CALL_TIMEOUT)
            got: list[str] = []
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                async for chunk in call:
                    got.append(chunk.text)
            return got, failed.value

    return asyncio.run(run())


def _stream_sync(proto: Proto) -> tuple[list[str], grpc.RpcError]:
    pool = futures.ThreadPoolExecutor(2)
    server = grpc.server(pool, interceptors=[RequestTracingInterceptor()])
    server.add_generic_rpc_handlers((_stream_handlers(proto, False),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    got: list[str] = []
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = channel.unary_stream(
                "/probe.None/Chunks",
                request_serializer=proto.pb2.InferRequest.SerializeToString,
                response_deserializer=proto.pb2.InferResponse.FromString,
            )(proto.pb2.InferRequest(), timeout=CALL_TIMEOUT)
            with pytest.raises(grpc.RpcError) as failed:
                for chunk in call:
                    got.append(chunk.text)
    finally:
        stopper = threading.Thread(target=server.stop, args=(None,), daemon=True)
        stopper.start()
        stopper.join(CALL_TIMEOUT)
        pool.shutdown(wait=False, cancel_futures=True)
    return got, failed.value


@pytest.mark.parametrize(
    ("serve", "code", "details"),
    [
        (_stream_aio, grpc.StatusCode.UNKNOWN, "Unexpected <class '"),  # the serializer's error
        (_stream_sync, grpc.StatusCode.INTERNAL, "Failed to serialize response!"),
    ],
    ids=["aio", "sync"],
)
def test_a_streamed_message_its_serializer_refuses_is_recorded_as_the_client_got_it(
    proto: Proto, log_lines: LogLines, serve: Any, code: grpc.StatusCode, details: str
) -> None:
    """gRPC fails the stream at a message it cannot serialize; the call was recorded
    CANCELLED / cancelled (INFO), as if the client had gone away."""
    got, failed = serve(proto)
    assert got == ["first"]
    assert failed.code() is code and failed.details().startswith(details)
    [server_id] = metadata_dict(failed.trailing_metadata())["x-server-request-id"]
    [end] = log_lines.events("request.end", request_id=server_id)
    assert (end["grpc_status"], end["outcome"], end["level"]) == (code.name, "error", "WARN")
    assert end["messages_out"] == 1 and "yielded a dict" in end["error"]


def test_a_written_message_its_serializer_refuses_is_not_counted_as_sent(
    proto: Proto, log_lines: LogLines
) -> None:
    """A stream written with context.write(): the refused message was counted before
    gRPC's write raised, so messages_out said two where the client got one."""

    async def chunks(request: Any, context: Any) -> None:
        await context.write(proto.pb2.InferResponse(text="first"))
        await context.write({"text": "a dict, not an InferResponse"})

    got, code, server_id = _written_call(proto, chunks)
    assert got == ["first"] and code is grpc.StatusCode.UNKNOWN
    [end] = log_lines.events("request.end", request_id=server_id)
    assert (end["grpc_status"], end["outcome"], end["messages_out"]) == ("UNKNOWN", "error", 1)
    # Named as a yielded one is: the written one left no `error` to search for.
    assert end["error"] == ("gRPC could not serialize the response: the handler wrote a "
                            "dict (TypeError)")


def _written_call(proto: Proto, handler: Any) -> tuple[list[str], grpc.StatusCode, str]:
    """Call ``handler`` (a grpc.aio unary-stream handler) once: the texts the client got,
    the status, and the server's id."""
    generic = grpc.method_handlers_generic_handler("probe.Written", {
        "Chunks": grpc.unary_stream_rpc_method_handler(
            handler,
            request_deserializer=proto.pb2.InferRequest.FromString,
            response_serializer=proto.pb2.InferResponse.SerializeToString,
        ),
    })

    async def run() -> tuple[list[str], grpc.StatusCode, str]:
        got: list[str] = []
        async with (
            serving(lambda s: s.add_generic_rpc_handlers((generic,)),
                    interceptors=[RequestTracingInterceptor()]) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            call = channel.unary_stream(
                "/probe.Written/Chunks",
                request_serializer=proto.pb2.InferRequest.SerializeToString,
                response_deserializer=proto.pb2.InferResponse.FromString,
            )(proto.pb2.InferRequest(), timeout=CALL_TIMEOUT)
            try:
                async for chunk in call:
                    got.append(chunk.text)
            except grpc.aio.AioRpcError:
                pass
            [server_id] = metadata_dict(await call.trailing_metadata())["x-server-request-id"]
            return got, await call.code(), server_id

    return asyncio.run(run())


def test_a_refused_write_the_handler_caught_is_not_the_calls_error(
    proto: Proto, log_lines: LogLines
) -> None:
    # The handler caught the write's TypeError and went on: the call ended OK, and its
    # request.end named the refusal as its error all the same.
    async def chunks(request: Any, context: Any) -> None:
        try:
            await context.write({"text": "a dict"})
        except TypeError:
            await context.write(proto.pb2.InferResponse(text="instead"))

    got, code, server_id = _written_call(proto, chunks)
    assert (got, code) == (["instead"], grpc.StatusCode.OK)
    [end] = log_lines.events("request.end", request_id=server_id)
    assert (end["grpc_status"], end["outcome"]) == ("OK", "ok") and "error" not in end


def test_a_refused_write_in_a_generator_handler_is_named(
    proto: Proto, log_lines: LogLines
) -> None:
    # grpc.aio lets an async generator handler write() too: only the coroutine's
    # refused write was named.
    async def chunks(request: Any, context: Any) -> Any:
        yield proto.pb2.InferResponse(text="first")
        await context.write({"text": "a dict"})

    got, code, server_id = _written_call(proto, chunks)
    assert (got, code) == (["first"], grpc.StatusCode.UNKNOWN)
    [end] = log_lines.events("request.end", request_id=server_id)
    assert end["error"] == ("gRPC could not serialize the response: the handler wrote a "
                            "dict (TypeError)")


def test_the_refused_values_type_is_named_with_its_article() -> None:
    # "the handler wrote a int" / "a object".
    from ridtrace.tracing.grpc.undecodable import unserializable_reason

    assert unserializable_reason(TypeError(), 7, "wrote").endswith("wrote an int (TypeError)")
    assert unserializable_reason(TypeError(), {}, "sent").endswith("sent a dict (TypeError)")
    assert unserializable_reason(TypeError(), None, "returned").endswith("returned None "
                                                                         "(TypeError)")
