"""Concurrent calls sharing one client id each get their own output, and a caller that
leaves mid-stream frees everything it held."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import grpc.aio

from ridtrace.frontend_plugin.engine import EchoEngine
from ridtrace.tracing import current_context
from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, Proto, metadata_dict, service_of, serving
from tests.tracing.grpc.inference_service import build_servicer

CALLS = 200
SHARED = "same-id-for-everyone"


def _add(proto: Proto, servicer: Any) -> Any:
    return lambda server: proto.pb2_grpc.add_InferenceServicer_to_server(servicer, server)


async def _stream_all(
    proto: Proto, servicer: Any, gate: asyncio.Event
) -> list[tuple[int, str, list[Any]]]:
    """Start CALLS streams sharing SHARED; open the gate once all are in flight."""
    async with (
        serving(_add(proto, servicer), interceptors=[RequestTracingInterceptor()]) as target,
        grpc.aio.insecure_channel(target) as channel,
    ):
        stub = proto.pb2_grpc.InferenceStub(channel)

        async def one(i: int) -> tuple[int, str, list[Any]]:
            call = stub.InferStream(
                proto.pb2.InferRequest(id=SHARED, prompt=f"caller {i} wants its own words"),
                metadata=(("x-request-id", SHARED),),
            )
            server_id = metadata_dict(await call.initial_metadata())["x-server-request-id"][0]
            chunks = [chunk async for chunk in call]
            return i, server_id, chunks

        tasks = [asyncio.create_task(one(i)) for i in range(CALLS)]
        # Every call holds its registry entry before any token flows: all CALLS overlap.
        while len(servicer.registry) < CALLS and not any(t.done() for t in tasks):
            await asyncio.sleep(0)  # yield to the server; the condition is what we wait on
        gate.set()
        return await asyncio.gather(*tasks)


def test_200_concurrent_streams_sharing_a_client_id_each_get_their_own_output(
    proto: Proto, log_lines: LogLines
) -> None:
    gate = asyncio.Event()
    servicer = build_servicer(proto, engine=EchoEngine(gate=gate, gate_timeout=30))
    results = asyncio.run(_stream_all(proto, servicer, gate))

    assert servicer.max_inflight == CALLS
    assert len(servicer.registry) == 0
    internal_ids = set()
    for i, server_id, chunks in results:
        assert "".join(c.text for c in chunks) == f"echo: caller {i} wants its own words", i
        assert {c.id for c in chunks} == {SHARED}, i  # KServe echo on every chunk
        assert {c.internal_request_id for c in chunks} == {server_id}, i
        internal_ids.add(server_id)
    assert len(internal_ids) == CALLS and SHARED not in internal_ids

    ends = log_lines.events("request.end")
    assert len(ends) == CALLS
    assert {e["request_id"] for e in ends} == internal_ids
    assert {e["x_request_id"] for e in ends} == {SHARED}
    assert {e["outcome"] for e in ends} == {"ok"}
    assert len({e["span_id"] for e in ends}) == CALLS  # the per-request key holds


def test_keyed_by_the_client_id_the_same_load_is_refused_not_crossed(
    proto: Proto, log_lines: LogLines
) -> None:
    """The control: key the registry by the client's id (the seed's bug) and the safe
    registry refuses all but one caller — the 200-call test above can tell."""
    gate = asyncio.Event()
    servicer = build_servicer(proto, engine=EchoEngine(gate=gate, gate_timeout=30), key_by="client")

    async def go() -> list[Any]:
        async with (
            serving(_add(proto, servicer), interceptors=[RequestTracingInterceptor()]) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            stub = proto.pb2_grpc.InferenceStub(channel)

            async def one(i: int) -> Any:
                call = stub.InferStream(
                    proto.pb2.InferRequest(id=SHARED, prompt=f"caller {i}"),
                    metadata=(("x-request-id", SHARED),),
                )
                try:
                    return "".join([c.text async for c in call])
                except grpc.aio.AioRpcError as exc:
                    return exc.code()

            tasks = [asyncio.create_task(one(i)) for i in range(20)]
            await log_lines.wait_for(lambda lines: len(lines.events("request.end")) == 19)
            gate.set()
            return await asyncio.gather(*tasks)

    results = asyncio.run(go())
    assert results.count(grpc.StatusCode.ALREADY_EXISTS) == 19
    assert len(log_lines.events("request.end", outcome="conflict")) == 19


def test_client_cancelling_mid_stream_is_cancelled_and_leaks_nothing(
    proto: Proto, log_lines: LogLines
) -> None:
    engine = _SaysWhenItHangs(hang_after_tokens=2)
    servicer = build_servicer(proto, engine=engine)
    probe = _ContextProbe(resumed_after=2)

    async def go() -> tuple[str, Any]:
        async with (
            serving(
                _add(proto, servicer), interceptors=[probe, RequestTracingInterceptor()]
            ) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            stub = proto.pb2_grpc.InferenceStub(channel)
            call = stub.InferStream(
                proto.pb2.InferRequest(id="c", prompt="never finishes this sentence"),
                metadata=(("x-request-id", "leaver"),),
            )
            server_id = metadata_dict(await call.initial_metadata())["x-server-request-id"][0]
            got = [await call.read(), await call.read()]
            assert [c.text for c in got] == ["echo:", " never"]
            # Cancelled once gRPC resumed the handler past its second message: cancelled
            # between sending the second and resuming, the second was never counted
            # (messages_out 1, a flake under the suite's load). The engine's own wait
            # did not say so: the servicer's pump asks it ahead of the messages sent.
            await asyncio.wait_for(engine.hanging.wait(), 60)
            await asyncio.wait_for(probe.resumed.wait(), 60)
            call.cancel()
            await log_lines.wait_for(lambda lines: bool(lines.events("request.end")))
            await probe.finished.wait()
            await servicer.drain()
            # The connection stays usable, and the next call gets a fresh context.
            again = await stub.Infer(proto.pb2.InferRequest(id="d", prompt="ok"))
            return server_id, again

    server_id, again = asyncio.run(go())
    (end, end_again) = log_lines.events("request.end")
    assert end["request_id"] == server_id
    assert end["outcome"] == "cancelled" and end["grpc_status"] == "CANCELLED"
    assert end["messages_out"] == 2
    assert end["x_request_id"] == "leaver"
    assert len(servicer.registry) == 0 and servicer.registry.released == 2
    assert not servicer.pumps
    assert probe.after == [None]  # reset in the handler's own task once it finished
    assert again.internal_request_id not in (server_id, "")
    assert end_again["outcome"] == "ok"


class _ContextProbe(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Sits outside ridtrace's interceptor and records the request context left behind
    in the call's task after ridtrace's wrapper finished (it must be none)."""

    def __init__(self, *, resumed_after: int = 0) -> None:
        self.after: list[Any] = []
        self.finished = asyncio.Event()
        # Set once gRPC resumed the handler past its `resumed_after`-th message: ridtrace's
        # wrapper, inside, counts a message as it resumes, in the same step of the loop.
        self.resumed_after = resumed_after
        self.resumed = asyncio.Event()

    async def intercept_service(self, continuation: Any, details: Any) -> Any:
        handler = await continuation(details)
        if handler is None or not handler.response_streaming or handler.request_streaming:
            return handler
        inner = handler.unary_stream

        async def probed(request: Any, context: Any) -> Any:
            responses = inner(request, context)
            sent = 0
            try:
                async for message in responses:
                    yield message
                    sent += 1
                    if sent == self.resumed_after:
                        self.resumed.set()
            finally:
                await responses.aclose()
                self.after.append(current_context())
                self.finished.set()

        return grpc.unary_stream_rpc_method_handler(
            probed,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


def test_a_passed_deadline_ends_the_call_as_cancelled_with_deadline_exceeded(
    log_lines: LogLines,
) -> None:
    async def stuck(request: bytes, context: Any) -> bytes:
        await asyncio.Event().wait()  # never set: only the deadline ends this call
        raise AssertionError  # pragma: no cover

    handlers = {"Stuck": grpc.unary_unary_rpc_method_handler(stuck)}

    add = service_of(handlers)

    async def go() -> grpc.StatusCode:
        async with (
            serving(add, interceptors=[RequestTracingInterceptor()]) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            # Connected first, and a deadline whose margin (a cancel within 1 % plus
            # 100 ms of it is the deadline) covers a loaded server reading the headers
            # late: at 0.2 s, a cold channel's connect ate the budget and the call died
            # before its handler ran (no request.end), or the server's copy of the
            # deadline lay 54 ms past the client's and its cancel read as the client's.
            await channel.channel_ready()
            try:
                await channel.unary_unary("/t.S/Stuck")(b"", timeout=1.0)
            except grpc.aio.AioRpcError as exc:
                code: grpc.StatusCode = exc.code()
            await log_lines.wait_for(lambda lines: bool(lines.events("request.end")))
            return code

    assert asyncio.run(go()) is grpc.StatusCode.DEADLINE_EXCEEDED
    (end,) = log_lines.events("request.end")
    assert end["outcome"] == "cancelled" and end["grpc_status"] == "DEADLINE_EXCEEDED"


class _SaysWhenItHangs(EchoEngine):
    """An echo engine that hangs after its tokens, and says when a caller asks past them."""

    def __init__(self, *, hang_after_tokens: int) -> None:
        super().__init__(hang_after_tokens=hang_after_tokens)
        self.hanging = asyncio.Event()

    async def batches(  # type: ignore[override]
        self, prompt: str, max_tokens: int, *args: Any, **kwargs: Any
    ) -> Any:
        sent = 0
        async for batch in super().batches(prompt, max_tokens, *args, **kwargs):
            yield batch
            sent += len(batch)
            if sent >= (self.hang_after_tokens or 0):
                self.hanging.set()  # asked for the next: the engine hangs now
