"""The interceptor on a synchronous ``grpc.server``: the same rules as on ``grpc.aio``.

Before, the interceptor's ``async def intercept_service`` handed the synchronous server
a coroutine where it expects a handler: the server's serving thread died on the first
call and every call after hung until its deadline.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest
from loguru import logger

from ridtrace.tracing import current_context, current_request_id, current_x_request_id
from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, metadata_dict

SERVICE = "probe.Sync"
CALL_TIMEOUT = 10.0


def _ids(request: bytes, context: grpc.ServicerContext) -> bytes:
    logger.info("in handler")
    return f"{current_request_id()}|{current_x_request_id()}".encode()


def _stream(request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
    for _ in range(3):
        logger.info("chunk")
        yield str(current_request_id()).encode()


def _count(requests: Iterator[bytes], context: grpc.ServicerContext) -> bytes:
    return f"{current_request_id()}|{sum(1 for _ in requests)}".encode()


def _each(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
    for _ in requests:
        yield str(current_request_id()).encode()


def _abort(request: bytes, context: grpc.ServicerContext) -> bytes:
    context.abort(grpc.StatusCode.NOT_FOUND, "no such thing")
    raise AssertionError("unreachable")


def _boom(request: bytes, context: grpc.ServicerContext) -> bytes:
    raise RuntimeError("kaboom")


def _handlers(extra: dict[str, grpc.RpcMethodHandler] | None = None) -> Any:
    methods = {
        "Ids": grpc.unary_unary_rpc_method_handler(_ids),
        "Stream": grpc.unary_stream_rpc_method_handler(_stream),
        "Count": grpc.stream_unary_rpc_method_handler(_count),
        "Each": grpc.stream_stream_rpc_method_handler(_each),
        "Abort": grpc.unary_unary_rpc_method_handler(_abort),
        "Boom": grpc.unary_unary_rpc_method_handler(_boom),
        **(extra or {}),
    }
    return grpc.method_handlers_generic_handler(SERVICE, methods)


def _sync_server(
    extra: dict[str, grpc.RpcMethodHandler] | None = None, *, workers: int = 4
) -> contextlib.AbstractContextManager[grpc.Channel]:
    return traced_sync_server(lambda s: s.add_generic_rpc_handlers((_handlers(extra),)),
                              workers=workers)


@contextlib.contextmanager
def traced_sync_server(
    add: Callable[[grpc.Server], None], *, workers: int
) -> Iterator[grpc.Channel]:
    """A synchronous server behind ridtrace's interceptor, its services added by `add`,
    on a free loopback port; a channel to it."""
    pool = futures.ThreadPoolExecutor(workers)
    server = grpc.server(pool, interceptors=[RequestTracingInterceptor()])
    add(server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            # Connected first: a short deadline is then the call's alone.
            grpc.channel_ready_future(channel).result(timeout=CALL_TIMEOUT)
            yield channel
    finally:
        # Bounded: a server whose serving thread died (the bug) blocks in stop() forever,
        # so it stops in a daemon thread and the test fails instead of hanging.
        stopper = threading.Thread(target=server.stop, args=(None,), daemon=True)
        stopper.start()
        stopper.join(CALL_TIMEOUT)
        pool.shutdown(wait=False, cancel_futures=True)


def _wait_until(predicate: Callable[[], bool], *, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition never held")
        time.sleep(0.01)


def test_sync_server_calls_of_every_shape_get_their_own_ids_and_lines(
    log_lines: LogLines,
) -> None:
    metadata = (("x-request-id", "corr-1"),)
    with _sync_server() as channel:
        body, call = channel.unary_unary(f"/{SERVICE}/Ids").with_call(
            b"", metadata=metadata, timeout=CALL_TIMEOUT
        )
        unary_trailing = metadata_dict(call.trailing_metadata())
        stream = channel.unary_stream(f"/{SERVICE}/Stream")(
            b"", metadata=metadata, timeout=CALL_TIMEOUT
        )
        chunks = list(stream)
        stream_initial = metadata_dict(stream.initial_metadata())
        counted = channel.stream_unary(f"/{SERVICE}/Count")(
            iter([b"a", b"b", b"c"]), metadata=metadata, timeout=CALL_TIMEOUT
        )
        each = list(
            channel.stream_stream(f"/{SERVICE}/Each")(
                iter([b"a", b"b"]), metadata=metadata, timeout=CALL_TIMEOUT
            )
        )
        failures = {}
        for name in ("Abort", "Boom"):
            with pytest.raises(grpc.RpcError) as failed:
                channel.unary_unary(f"/{SERVICE}/{name}")(
                    b"", metadata=metadata, timeout=CALL_TIMEOUT
                )
            failures[name] = failed.value

    request_id, x_request_id = body.decode().split("|")
    assert x_request_id == "corr-1" and request_id != "corr-1"
    assert unary_trailing["x-server-request-id"] == [request_id]
    assert unary_trailing["x-request-id"] == ["corr-1"]
    assert len(set(chunks)) == 1  # one call, one id across every chunk
    assert stream_initial["x-server-request-id"] == [chunks[0].decode()]
    assert counted.decode().endswith("|3")
    assert len(set(each)) == 2  # a bidirectional stream: one identity per request
    assert failures["Abort"].code() is grpc.StatusCode.NOT_FOUND
    assert failures["Boom"].code() is grpc.StatusCode.UNKNOWN
    for failure in failures.values():
        assert "x-server-request-id" in metadata_dict(failure.trailing_metadata())

    ends = {line["rpc_method"].rsplit("/", 1)[1]: line for line in log_lines.events(
        "request.end") if "stream_index" not in line}
    assert set(ends) == {"Ids", "Stream", "Count", "Each", "Abort", "Boom"}
    assert all(line["x_request_id"] == "corr-1" for line in ends.values())
    assert ends["Ids"]["request_id"] == request_id
    assert (ends["Abort"]["grpc_status"], ends["Abort"]["outcome"]) == ("NOT_FOUND", "ok")
    assert (ends["Boom"]["grpc_status"], ends["Boom"]["outcome"]) == ("UNKNOWN", "error")
    assert ends["Stream"]["messages_out"] == 3 and ends["Count"]["messages_in"] == 3
    handler_lines = [x for x in log_lines.lines if x["message"] in ("in handler", "chunk")]
    assert [x["request_id"] for x in handler_lines] == [request_id] + [chunks[0].decode()] * 3
    assert current_context() is None


def test_sync_server_call_to_an_unknown_method_is_answered_unimplemented_and_logged(
    log_lines: LogLines,
) -> None:
    """Before, the synchronous server answered it itself: no lines, no id."""
    with _sync_server() as channel:
        with pytest.raises(grpc.RpcError) as unary:
            channel.unary_unary(f"/{SERVICE}/Missing")(
                b"", metadata=(("x-request-id", "corr-2"),), timeout=CALL_TIMEOUT
            )
        # A streaming client is answered the same, whatever it sends.
        with pytest.raises(grpc.RpcError) as streaming:
            list(
                channel.stream_stream("/other.Service/Gone")(
                    iter([b"a", b"b"]), timeout=CALL_TIMEOUT
                )
            )
    for failure in (unary.value, streaming.value):
        assert failure.code() is grpc.StatusCode.UNIMPLEMENTED
        assert failure.details() == "Method not found!"
    ends = {line["rpc_method"]: line for line in log_lines.events("request.end")}
    assert set(ends) == {f"/{SERVICE}/Missing", "/other.Service/Gone"}
    missing = ends[f"/{SERVICE}/Missing"]
    assert missing["x_request_id"] == "corr-2"
    trailing = metadata_dict(unary.value.trailing_metadata())
    assert trailing["x-server-request-id"] == [missing["request_id"]]
    for end in ends.values():
        assert (end["grpc_status"], end["outcome"]) == ("UNIMPLEMENTED", "error")
        assert end["messages_in"] == 0 and end["span_id"]
    assert len(log_lines.events("request.start")) == 2
    assert current_context() is None


def test_sync_server_concurrent_calls_sharing_a_client_id_get_distinct_ids(
    log_lines: LogLines,
) -> None:
    calls = 24
    with _sync_server(workers=4) as channel, futures.ThreadPoolExecutor(8) as clients:
        method = channel.unary_unary(f"/{SERVICE}/Ids")
        replies = list(
            clients.map(
                lambda _: method(
                    b"", metadata=(("x-request-id", "shared"),), timeout=CALL_TIMEOUT
                ),
                range(calls),
            )
        )
    pairs = [reply.decode().split("|") for reply in replies]
    assert all(x_request_id == "shared" for _, x_request_id in pairs)
    assert len({request_id for request_id, _ in pairs}) == calls
    ends = log_lines.events("request.end")
    assert sorted(x["request_id"] for x in ends) == sorted(r for r, _ in pairs)


def test_sync_server_client_cancel_mid_stream_ends_the_call_cancelled(
    log_lines: LogLines,
) -> None:
    first_sent = threading.Event()

    def slow(request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
        # The second message waits until the server has seen the client's cancel: sent
        # before it, it could complete the call as ok.
        ended = threading.Event()
        context.add_callback(ended.set)
        try:
            yield b"first"
            first_sent.set()
            ended.wait(CALL_TIMEOUT)
            yield b"second"
        finally:
            logger.info("handler cleanup")

    extra = {"Slow": grpc.unary_stream_rpc_method_handler(slow)}
    with _sync_server(extra, workers=1) as channel:
        stream = channel.unary_stream(f"/{SERVICE}/Slow")(b"", timeout=CALL_TIMEOUT)
        assert next(stream) == b"first"
        assert first_sent.wait(CALL_TIMEOUT)
        stream.cancel()
        _wait_until(lambda: bool(log_lines.events("request.end")))
        # The single worker thread serves the next call with nothing left of the last.
        after = channel.unary_unary(f"/{SERVICE}/Ids")(b"", timeout=CALL_TIMEOUT)
    (end, after_end) = log_lines.events("request.end")
    assert end["outcome"] == "cancelled" and end["grpc_status"] == "CANCELLED"
    (cleanup,) = [x for x in log_lines.lines if x["message"] == "handler cleanup"]
    assert cleanup["request_id"] == end["request_id"]
    assert after.decode().split("|")[0] == after_end["request_id"] != end["request_id"]


@pytest.mark.parametrize("how", ["deadline", "cancel"])
def test_sync_server_unary_call_the_client_gave_up_on_is_not_logged_ok(
    log_lines: LogLines, how: str
) -> None:
    """A synchronous server never interrupts a unary handler: it returns normally after
    the client's deadline passed (or the client cancelled), and the client got
    DEADLINE_EXCEEDED / CANCELLED. The call was logged ``OK``/``ok`` all the same, a
    status nobody received."""
    entered = threading.Event()

    def slow(request: bytes, context: grpc.ServicerContext) -> bytes:
        entered.set()
        ended = threading.Event()
        context.add_callback(ended.set)  # the server saw the call end
        ended.wait(CALL_TIMEOUT)
        return b"too late"

    extra = {"Slow": grpc.unary_unary_rpc_method_handler(slow)}
    with _sync_server(extra) as channel:
        method = channel.unary_unary(f"/{SERVICE}/Slow")
        if how == "deadline":
            with pytest.raises(grpc.RpcError) as raised:
                # Long enough that the headers' way on a loaded machine stays within
                # the margin a cancel near the deadline is taken for the deadline by.
                method(b"", timeout=1.0)
            assert raised.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        else:
            future = method.future(b"", timeout=CALL_TIMEOUT)
            assert entered.wait(CALL_TIMEOUT)
            future.cancel()
        _wait_until(lambda: bool(log_lines.events("request.end")))
    (end,) = log_lines.events("request.end")
    expected = "DEADLINE_EXCEEDED" if how == "deadline" else "CANCELLED"
    assert (end["grpc_status"], end["outcome"]) == (expected, "cancelled")
    assert end["messages_out"] == 0


@pytest.mark.parametrize("shape", ["unary", "server_stream"])
def test_sync_server_call_cancelled_long_before_its_deadline_is_not_deadline_exceeded(
    log_lines: LogLines, shape: str
) -> None:
    """The client cancels a call with a 1 s timeout at once; the handler, which the
    synchronous server never interrupts, returns after the deadline. The client got
    CANCELLED; the call was recorded DEADLINE_EXCEEDED with an error span, because the
    deadline was read when the handler returned, not when the call ended."""
    entered = threading.Event()

    def past_the_deadline(context: grpc.ServicerContext) -> None:
        entered.set()
        ended = threading.Event()
        context.add_callback(ended.set)
        assert ended.wait(CALL_TIMEOUT)
        left = context.time_remaining()
        time.sleep(max(left or 0.0, 0.0) + 0.05)  # returns past the deadline, surely

    def slow(request: bytes, context: grpc.ServicerContext) -> bytes:
        past_the_deadline(context)
        return b"late"

    def slow_stream(request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
        past_the_deadline(context)
        yield b"late"

    extra = {"Slow": grpc.unary_unary_rpc_method_handler(slow),
             "SlowStream": grpc.unary_stream_rpc_method_handler(slow_stream)}
    with _sync_server(extra) as channel:
        if shape == "unary":
            call: Any = channel.unary_unary(f"/{SERVICE}/Slow").future(b"", timeout=1.0)
        else:
            call = channel.unary_stream(f"/{SERVICE}/SlowStream")(b"", timeout=1.0)
        assert entered.wait(CALL_TIMEOUT)
        call.cancel()
        assert call.code() == grpc.StatusCode.CANCELLED
        _wait_until(lambda: bool(log_lines.events("request.end")))
    (end,) = log_lines.events("request.end")
    assert (end["grpc_status"], end["outcome"], end["level"]) == (
        "CANCELLED", "cancelled", "INFO")


@pytest.mark.parametrize(("shape", "how"), [
    ("client_stream", "cancel"), ("client_stream", "deadline"),
    ("bidi", "cancel"), ("bidi", "deadline"),
])
def test_sync_server_request_stream_the_client_gave_up_on_is_not_an_error(
    log_lines: LogLines, shape: str, how: str
) -> None:
    """The synchronous server's request iterator raises a bare ``grpc.RpcError`` when
    the client cancels or its deadline passes mid-stream: the handler let it escape and
    the call was logged ``UNKNOWN`` / ``error`` (a WARN, the span an error with the
    exception), though the client got CANCELLED / DEADLINE_EXCEEDED and the server did
    nothing wrong."""
    second_read = threading.Event()
    stop = threading.Event()

    def requests() -> Iterator[bytes]:
        yield b"a"
        second_read.wait(CALL_TIMEOUT)
        stop.wait(CALL_TIMEOUT)  # until the test ends: the client gives up meanwhile
        yield b"never"

    def reads(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
        # The next read waits until the server saw the call end. Blocked in a read
        # when a cancel arrives, grpc's iterator may instead end as if the client had
        # closed its stream, and nothing tells the handler's return from a completed
        # call (a race inside grpc, left as it is).
        ended = threading.Event()
        context.add_callback(ended.set)
        first = next(requests)
        second_read.set()
        ended.wait(CALL_TIMEOUT)
        rest = list(requests)  # raises: the call has ended
        yield from (first, *rest)

    def count(requests: Iterator[bytes], context: grpc.ServicerContext) -> bytes:
        return f"{sum(1 for _ in reads(requests, context))}".encode()

    def each(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
        yield from reads(requests, context)

    extra = {"Count": grpc.stream_unary_rpc_method_handler(count),
             "Each": grpc.stream_stream_rpc_method_handler(each)}
    try:
        with _sync_server(extra) as channel:
            timeout = 0.5 if how == "deadline" else CALL_TIMEOUT
            if shape == "client_stream":
                call: Any = channel.stream_unary(f"/{SERVICE}/Count").future(
                    requests(), timeout=timeout
                )
            else:
                call = channel.stream_stream(f"/{SERVICE}/Each")(requests(), timeout=timeout)
            assert second_read.wait(CALL_TIMEOUT)
            if how == "cancel":
                call.cancel()
            _wait_until(lambda: bool(log_lines.events("request.end", stream_index=None)))
    finally:
        stop.set()
    (end,) = log_lines.events("request.end", stream_index=None)
    expected = "DEADLINE_EXCEEDED" if how == "deadline" else "CANCELLED"
    assert (end["grpc_status"], end["outcome"], end["level"]) == (expected, "cancelled", "INFO")
    items = [x for x in log_lines.events("request.end") if x.get("stream_index") is not None]
    assert all(x["outcome"] != "error" for x in items)


def test_sync_server_error_spans_name_what_failed_and_record_only_crashes() -> None:
    # A synchronous server's abort raises a bare Exception: it was recorded as an
    # exception event, as if the handler had crashed, and neither it nor a real crash
    # said what failed (error.type).
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    def internal(request: bytes, context: grpc.ServicerContext) -> bytes:
        context.abort(grpc.StatusCode.INTERNAL, "store unreachable")
        raise AssertionError("unreachable")

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    pool = futures.ThreadPoolExecutor(2)
    server = grpc.server(pool, interceptors=[RequestTracingInterceptor(tracer_provider=provider)])
    server.add_generic_rpc_handlers(
        (_handlers({"Internal": grpc.unary_unary_rpc_method_handler(internal)}),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            for method in ("Internal", "Boom"):
                with pytest.raises(grpc.RpcError):
                    channel.unary_unary(f"/{SERVICE}/{method}")(b"", timeout=CALL_TIMEOUT)
        _wait_until(lambda: len(exporter.get_finished_spans()) == 2)
    finally:
        server.stop(None)
        pool.shutdown(wait=False)
    spans = {s.name.rsplit("/", 1)[-1]: s for s in exporter.get_finished_spans()}
    aborted, crashed = spans["Internal"], spans["Boom"]
    assert (aborted.attributes or {})["error.type"] == "INTERNAL" and not aborted.events
    assert (crashed.attributes or {})["error.type"] == "RuntimeError"
    assert [e.name for e in crashed.events] == ["exception"]


def test_the_interceptor_is_a_server_interceptor_of_both_apis() -> None:
    # grpc.server's interceptors= takes grpc.ServerInterceptor, grpc.aio.server's the aio
    # one (so typeshed's types-grpcio types them): one object serves both, and is both.
    interceptor = RequestTracingInterceptor()
    assert isinstance(interceptor, grpc.ServerInterceptor)
    assert isinstance(interceptor, grpc.aio.ServerInterceptor)
