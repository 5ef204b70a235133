"""Identity rules over a real grpc.aio server: minted ids, echo, metadata, log lines."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, nullcontext
from typing import Any

import grpc
import grpc.aio
import pytest

from ridtrace.tracing import current_context, current_request_id
from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, Proto, metadata_dict, service_of, serving
from tests.tracing.grpc.inference_service import build_servicer

SHARED = "client-7"


def _add(proto: Proto, servicer: Any) -> Any:
    return lambda server: proto.pb2_grpc.add_InferenceServicer_to_server(servicer, server)


@asynccontextmanager
async def _traced_stub(proto: Proto) -> AsyncIterator[Any]:
    """A client stub of the echo inference service, served behind the interceptor."""
    servicer = build_servicer(proto)
    async with (
        serving(_add(proto, servicer), interceptors=[RequestTracingInterceptor()]) as target,
        grpc.aio.insecure_channel(target) as channel,
    ):
        yield proto.pb2_grpc.InferenceStub(channel)


def test_importing_ridtrace_does_not_import_grpc() -> None:
    code = (
        "import sys, ridtrace, ridtrace.tracing\n"
        "assert 'grpc' not in sys.modules, 'grpc imported'\n"
        "import ridtrace.tracing.grpc\n"
        "assert 'grpc' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@pytest.mark.parametrize("initial_metadata", ["streaming", "always"])
def test_unary_mints_an_id_echoes_the_client_id_and_returns_the_server_id(
    proto: Proto, log_lines: LogLines, initial_metadata: Any
) -> None:
    interceptor = RequestTracingInterceptor(initial_metadata=initial_metadata)

    async def go() -> None:
        servicer = build_servicer(proto)
        async with (
            serving(_add(proto, servicer), interceptors=[interceptor]) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            stub = proto.pb2_grpc.InferenceStub(channel)
            call = stub.Infer(
                proto.pb2.InferRequest(id="kserve-1", prompt="hi there"),
                metadata=(("x-request-id", SHARED),),
            )
            response = await call
            initial = metadata_dict(await call.initial_metadata())
            trailing = metadata_dict(await call.trailing_metadata())
        assert response.text == "echo: hi there"
        assert response.id == "kserve-1"  # the proto id, echoed verbatim
        internal = response.internal_request_id
        assert internal not in ("kserve-1", SHARED)
        assert trailing["x-server-request-id"] == [internal]
        assert trailing["x-request-id"] == [SHARED]
        if initial_metadata == "always":
            assert initial["x-server-request-id"] == [internal]
            assert initial["x-request-id"] == [SHARED]
        else:  # unary: the trailers arrive with the response; no extra send by default
            assert "x-server-request-id" not in initial
        assert current_context() is None  # nothing leaked into the test's own task

        (start,) = log_lines.events("request.start")
        (end,) = log_lines.events("request.end")
        for line in (start, end):
            assert line["request_id"] == internal
            assert line["x_request_id"] == SHARED
            assert line["path"] == line["rpc_method"] == "/ridtrace.inference.v1.Inference/Infer"
            assert len(line["trace_id"]) == 32 and len(line["span_id"]) == 16
        assert start["client"].startswith("127.0.0.1:")
        assert "grpc-python" in start["user_agent"]
        assert end["grpc_status"] == "OK" and end["outcome"] == "ok"
        assert end["status"] == 0  # an integer, as the log schema types it
        assert end["messages_in"] == 1 and end["messages_out"] == 1
        assert end["duration_ms"] >= 0
        assert "deprecated_headers" not in end

    asyncio.run(go())


def test_proto_id_is_the_correlation_id_when_metadata_has_none(
    proto: Proto, log_lines: LogLines
) -> None:
    async def go() -> Any:
        async with _traced_stub(proto) as stub:
            return await stub.Infer(proto.pb2.InferRequest(id="body-id", prompt="x"))

    response = asyncio.run(go())
    assert response.id == "body-id"
    (end,) = log_lines.events("request.end")
    assert end["x_request_id"] == "body-id"
    assert end["request_id"] == response.internal_request_id != "body-id"


@pytest.mark.parametrize("initial_metadata", ["streaming", "never"])
def test_streaming_keeps_the_context_across_yields_and_echoes_every_chunk(
    proto: Proto, log_lines: LogLines, initial_metadata: Any
) -> None:
    interceptor = RequestTracingInterceptor(initial_metadata=initial_metadata)

    async def go() -> None:
        servicer = build_servicer(proto)
        async with (
            serving(_add(proto, servicer), interceptors=[interceptor]) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            stub = proto.pb2_grpc.InferenceStub(channel)
            call = stub.InferStream(
                proto.pb2.InferRequest(id="s-1", prompt="a b c d"),
                metadata=(("x-request-id", SHARED),),
            )
            initial = metadata_dict(await call.initial_metadata())
            chunks = [chunk async for chunk in call]
            trailing = metadata_dict(await call.trailing_metadata())
        (internal,) = trailing["x-server-request-id"]
        if initial_metadata == "never":
            assert "x-server-request-id" not in initial
        else:  # the client can read the id before the first message
            assert initial["x-server-request-id"] == [internal]
        assert "".join(c.text for c in chunks) == "echo: a b c d"
        assert {c.id for c in chunks} == {"s-1"}
        assert {c.internal_request_id for c in chunks} == {internal}
        (end,) = log_lines.events("request.end")
        assert end["messages_out"] == len(chunks) == 5
        assert end["outcome"] == "ok" and end["request_id"] == internal

    asyncio.run(go())


def test_stream_unary_and_stream_stream(proto: Proto, log_lines: LogLines) -> None:
    async def requests() -> Any:
        for word in ("one", "two", "three"):
            yield proto.pb2.InferRequest(id=f"id-{word}", prompt=word)

    async def go() -> tuple[Any, list[Any], str]:
        async with _traced_stub(proto) as stub:
            collected = await stub.InferCollect(requests())
            chat = stub.InferChat(requests())
            replies = [reply async for reply in chat]
            chat_id = metadata_dict(await chat.initial_metadata())["x-server-request-id"][0]
        return collected, replies, chat_id

    collected, replies, chat_id = asyncio.run(go())
    assert collected.text == "one | two | three" and collected.id == "id-three"
    assert [r.text for r in replies] == ["echo: one", "echo: two", "echo: three"]
    assert [r.id for r in replies] == ["id-one", "id-two", "id-three"]
    # A bidirectional stream: each request message is a request of its own.
    item_ids = [r.internal_request_id for r in replies]
    assert len(set(item_ids)) == 3 and chat_id not in item_ids
    calls = [line for line in log_lines.events("request.end") if "stream_request_id" not in line]
    ends = {line["rpc_method"].rsplit("/", 1)[1]: line for line in calls}
    assert ends["InferCollect"]["messages_in"] == 3 and ends["InferCollect"]["messages_out"] == 1
    assert ends["InferChat"]["messages_in"] == 3 and ends["InferChat"]["messages_out"] == 3
    assert ends["InferChat"]["request_id"] == chat_id
    assert ends["InferChat"]["stream_requests"] == 3
    items = log_lines.events("request.end", stream_request_id=chat_id)
    assert [(i["request_id"], i["x_request_id"], i["stream_index"]) for i in items] == [
        (rid, f"id-{word}", n) for n, (rid, word) in enumerate(zip(item_ids, ("one", "two", "three"), strict=True))
    ]
    assert all(i["outcome"] == "ok" for i in items)


def test_handler_metadata_is_merged_never_duplicated(proto: Proto, log_lines: LogLines) -> None:
    async def unary(request: bytes, context: Any) -> bytes:
        await context.send_initial_metadata((("x-server-request-id", "forged"), ("mine", "1")))
        context.set_trailing_metadata((("x-request-id", "forged"), ("t", "2")))
        return request

    async def aborts(request: bytes, context: Any) -> bytes:
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no", (("why", "bad"),))
        raise AssertionError  # pragma: no cover

    async def crashes(request: bytes, context: Any) -> bytes:
        raise RuntimeError("handler bug")

    handlers = {
        "Echo": grpc.unary_unary_rpc_method_handler(unary),
        "Abort": grpc.unary_unary_rpc_method_handler(aborts),
        "Crash": grpc.unary_unary_rpc_method_handler(crashes),
    }

    add = service_of(handlers)

    async def go() -> dict[str, Any]:
        results: dict[str, Any] = {}
        async with (
            serving(add, interceptors=[RequestTracingInterceptor()]) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            for name in handlers:
                call = channel.unary_unary(f"/t.S/{name}")(
                    b"x", metadata=(("x-request-id", SHARED),)
                )
                with pytest.raises(grpc.aio.AioRpcError) if name != "Echo" else nullcontext():
                    await call
                results[name] = (
                    await call.code(),
                    metadata_dict(await call.initial_metadata()),
                    metadata_dict(await call.trailing_metadata()),
                )
        return results

    results = asyncio.run(go())
    code, initial, trailing = results["Echo"]
    assert code is grpc.StatusCode.OK
    assert initial["mine"] == ["1"] and trailing["t"] == ["2"]
    assert len(initial["x-server-request-id"]) == 1 and initial["x-server-request-id"] != ["forged"]
    assert trailing["x-request-id"] == [SHARED]
    for name, status, outcome in (
        ("Abort", "INVALID_ARGUMENT", "ok"),
        ("Crash", "UNKNOWN", "error"),
    ):
        code, _, trailing = results[name]
        assert code.name == status
        (end,) = log_lines.events("request.end", rpc_method=f"/t.S/{name}")
        assert end["grpc_status"] == status and end["outcome"] == outcome
        assert trailing["x-server-request-id"] == [end["request_id"]]
    assert results["Abort"][2]["why"] == ["bad"]
    (crash_end,) = log_lines.events("request.end", rpc_method="/t.S/Crash")
    assert crash_end["level"] == "WARN"


def test_sync_handlers_pass_through_untraced(proto: Proto, log_lines: LogLines) -> None:
    def sync_unary(request: bytes, context: Any) -> bytes:
        return (current_request_id() or "none").encode()

    handlers = {"Sync": grpc.unary_unary_rpc_method_handler(sync_unary)}

    add = service_of(handlers)

    async def go() -> bytes:
        async with (
            serving(
                add,
                interceptors=[RequestTracingInterceptor()],
                migration_thread_pool=ThreadPoolExecutor(max_workers=1),
            ) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            return bytes(await channel.unary_unary("/t.S/Sync")(b"x"))

    assert asyncio.run(go()) == b"none"
    assert log_lines.events("request.start") == []


def test_streams_written_with_context_write_are_traced_too(log_lines: LogLines) -> None:
    async def writer(request: bytes, context: Any) -> None:
        for _ in range(3):
            await context.write((current_request_id() or "").encode())

    async def status_abort(request: bytes, context: Any) -> bytes:
        await context.abort_with_status(_Status())
        raise AssertionError  # pragma: no cover

    handlers = {
        "Write": grpc.unary_stream_rpc_method_handler(writer),
        "AbortStatus": grpc.unary_unary_rpc_method_handler(status_abort),
    }

    add = service_of(handlers)

    async def go() -> tuple[list[bytes], dict[str, list[Any]], Any]:
        async with (
            serving(add, interceptors=[RequestTracingInterceptor()]) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            call = channel.unary_stream("/t.S/Write")(b"")
            initial = metadata_dict(await call.initial_metadata())
            messages = [bytes(m) async for m in call]
            aborted = channel.unary_unary("/t.S/AbortStatus")(b"")
            with pytest.raises(grpc.aio.AioRpcError):
                await aborted
            return messages, initial, metadata_dict(await aborted.trailing_metadata())

    messages, initial, aborted_trailing = asyncio.run(go())
    (server_id,) = initial["x-server-request-id"]
    assert messages == [server_id.encode()] * 3
    write_end, abort_end = log_lines.events("request.end")
    assert write_end["messages_out"] == 3 and write_end["outcome"] == "ok"
    assert abort_end["grpc_status"] == "FAILED_PRECONDITION"
    assert aborted_trailing["x-server-request-id"] == [abort_end["request_id"]]
    assert aborted_trailing["reason"] == ["state"]


class _Status:
    code = grpc.StatusCode.FAILED_PRECONDITION
    details = "not now"
    trailing_metadata = (("reason", "state"),)


def test_a_stream_messages_body_id_is_read_as_a_header_is(
    proto: Proto, log_lines: LogLines
) -> None:
    # Each message's body id is checked like a header (grpc.md): the blanks around it
    # are no part of it. An id of only spaces was the request's x_request_id, " pad "
    # and "pad" were two client ids, and a tab-padded one was refused.
    sent = ["   ", " pad ", "pad", "\tpad"]

    async def requests() -> Any:
        for body_id in sent:
            yield proto.pb2.InferRequest(id=body_id, prompt="x")

    async def go() -> str:
        async with _traced_stub(proto) as stub:
            chat = stub.InferChat(requests(), metadata=(("x-request-id", "stream-x"),))
            assert len([reply async for reply in chat]) == len(sent)
            return str(metadata_dict(await chat.initial_metadata())["x-server-request-id"][0])

    chat_id = asyncio.run(go())
    starts = log_lines.events("request.start", stream_request_id=chat_id)
    assert [(i["x_request_id"], i.get("x_request_id_rejected")) for i in starts] == [
        ("stream-x", True), ("pad", None), ("pad", None), ("pad", None)]
    ends = log_lines.events("request.end", stream_request_id=chat_id)
    assert [i["x_request_id"] for i in ends] == ["stream-x", "pad", "pad", "pad"]
