"""gRPC's health service behind the interceptor, and streams a synchronous server
answers through a callback (``experimental_non_blocking``).

grpcio-health-checking's ``HealthServicer.Watch`` is non-blocking by default on a
synchronous server: it holds no pool thread while a watch is open. Wrapped as a
generator handler it fell back to a blocking iterator, one pool thread per open watch,
and with as many watches as the pool has threads every other call (the ``Check`` a
liveness probe makes) waited until its deadline.
"""

from __future__ import annotations

import json
import threading
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from click.testing import CliRunner
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from loguru import logger

from ridtrace.cli.main import main
from ridtrace.tracing import current_context
from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, metadata_dict
from tests.tracing.grpc.test_grpc_sync_server import (
    CALL_TIMEOUT,
    _wait_until,
    traced_sync_server,
)

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def test_open_health_watches_leave_the_pool_to_other_calls(log_lines: LogLines) -> None:
    servicer = health.HealthServicer()
    workers = 2
    with traced_sync_server(
        lambda s: health_pb2_grpc.add_HealthServicer_to_server(servicer, s), workers=workers
    ) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        watches = [
            stub.Watch(
                health_pb2.HealthCheckRequest(service=""),
                metadata=(("x-request-id", f"watch-{i}"),),
                timeout=CALL_TIMEOUT * 3,
            )
            for i in range(workers)
        ]
        assert [next(watch).status for watch in watches] == [SERVING] * workers
        # Before: both pool threads held by the watches, this Check hit its deadline.
        reply, check = stub.Check.with_call(
            health_pb2.HealthCheckRequest(service=""), timeout=CALL_TIMEOUT
        )
        assert reply.status == SERVING
        servicer.set("", NOT_SERVING)
        assert [next(watch).status for watch in watches] == [NOT_SERVING] * workers
        watch_ids = [
            metadata_dict(watch.initial_metadata())["x-server-request-id"] for watch in watches
        ]
        for watch in watches:
            watch.cancel()
        _wait_until(lambda: len(log_lines.events("request.end")) == workers + 1)

    ends = {line["request_id"]: line for line in log_lines.events("request.end")}
    check_id = metadata_dict(check.trailing_metadata())["x-server-request-id"][0]
    assert ends[check_id]["grpc_status"] == "OK"
    for i, [watch_id] in enumerate(watch_ids):
        end = ends[watch_id]
        assert end["rpc_method"] == "/grpc.health.v1.Health/Watch"
        assert end["x_request_id"] == f"watch-{i}"
        assert (end["grpc_status"], end["outcome"]) == ("CANCELLED", "cancelled")
        assert (end["messages_in"], end["messages_out"]) == (1, 2)
        assert end["span_id"]
    assert current_context() is None


def test_a_callback_stream_ends_ok_in_its_own_pool_with_its_ids(log_lines: LogLines) -> None:
    """A non-blocking behaviour of one's own: it runs in the pool it names, answers from
    another thread, and its call ends when it sends ``None``."""
    own_pool = futures.ThreadPoolExecutor(1, thread_name_prefix="own-pool")
    ran_in: list[str] = []

    def countdown(request: bytes, context: grpc.ServicerContext, send: Any) -> None:
        ran_in.append(threading.current_thread().name)
        logger.info("counting down")

        def answer() -> None:
            for n in (b"3", b"2", b"1"):
                send(n)
            send(None)

        threading.Thread(target=answer).start()

    def where(request: bytes, context: grpc.ServicerContext) -> bytes:
        return threading.current_thread().name.encode()

    countdown.experimental_non_blocking = True  # type: ignore[attr-defined]
    countdown.experimental_thread_pool = own_pool  # type: ignore[attr-defined]
    where.experimental_thread_pool = own_pool  # type: ignore[attr-defined]
    generic = grpc.method_handlers_generic_handler(
        "probe.Callback",
        {
            "Countdown": grpc.unary_stream_rpc_method_handler(countdown),
            "Where": grpc.unary_unary_rpc_method_handler(where),
        },
    )
    try:
        with traced_sync_server(lambda s: s.add_generic_rpc_handlers((generic,)), workers=2) as channel:
            call = channel.unary_stream("/probe.Callback/Countdown")(
                b"", metadata=(("x-request-id", "cb-1"),), timeout=CALL_TIMEOUT
            )
            assert list(call) == [b"3", b"2", b"1"]
            assert call.code() is grpc.StatusCode.OK
            [request_id] = metadata_dict(call.trailing_metadata())["x-server-request-id"]
            assert metadata_dict(call.initial_metadata())["x-server-request-id"] == [request_id]
            _wait_until(lambda: bool(log_lines.events("request.end")))
            # Not only non-blocking functions: any function's own pool is kept.
            where_ran = channel.unary_unary("/probe.Callback/Where")(b"", timeout=CALL_TIMEOUT)
    finally:
        own_pool.shutdown()

    assert ran_in and ran_in[0].startswith("own-pool")
    assert where_ran.startswith(b"own-pool")
    [end] = log_lines.events("request.end", rpc_method="/probe.Callback/Countdown")
    assert end["request_id"] == request_id and end["x_request_id"] == "cb-1"
    assert (end["grpc_status"], end["outcome"], end["messages_out"]) == ("OK", "ok", 3)
    [line] = [x for x in log_lines.lines if x["message"] == "counting down"]
    assert line["request_id"] == request_id


def test_a_callback_stream_message_its_serializer_refuses_is_recorded_as_the_client_got_it(
    log_lines: LogLines,
) -> None:
    """gRPC answers INTERNAL for a response its serializer refuses, as for a generator's;
    sent through the callback, the call was recorded CANCELLED / cancelled (the end
    gRPC reports for any call it ended), with the refused message counted as sent."""

    def answers(request: bytes, context: grpc.ServicerContext, send: Any) -> None:
        def later() -> None:
            send(b"first")
            send({"text": "a dict, not bytes"})
            send(None)

        threading.Thread(target=later).start()

    answers.experimental_non_blocking = True  # type: ignore[attr-defined]
    generic = grpc.method_handlers_generic_handler("probe.Callback", {
        "Answers": grpc.unary_stream_rpc_method_handler(answers, response_serializer=bytes),
    })
    with traced_sync_server(lambda s: s.add_generic_rpc_handlers((generic,)), workers=2) as channel:
        call = channel.unary_stream("/probe.Callback/Answers")(b"", timeout=CALL_TIMEOUT)
        got = []
        with pytest.raises(grpc.RpcError):
            for answer in call:
                got.append(answer)
        assert got == [b"first"]
        assert call.code() is grpc.StatusCode.INTERNAL
        [server_id] = metadata_dict(call.trailing_metadata())["x-server-request-id"]
        _wait_until(lambda: bool(log_lines.events("request.end")))
    [end] = log_lines.events("request.end", request_id=server_id)
    assert (end["grpc_status"], end["outcome"], end["level"]) == ("INTERNAL", "error", "WARN")
    assert end["messages_out"] == 1 and "sent a dict" in end["error"]


def test_health_checks_are_left_out_of_the_jaeger_export_as_http_probes_are(
    log_lines: LogLines, tmp_path: Path
) -> None:
    """A gRPC service's liveness probe (Kubernetes' grpc probe, grpc-health-probe) is
    a Check every few seconds: thousands of spans that hid the requests in Jaeger, where
    the HTTP probes (/health, /healthz...) were left out unless --include-health."""

    def add(server: grpc.Server) -> None:
        health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            "demo.Greeter", {"Hello": grpc.unary_unary_rpc_method_handler(lambda r, c: b"hi")}
        ),))

    with traced_sync_server(add, workers=2) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for _ in range(3):
            stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=CALL_TIMEOUT)
        channel.unary_unary("/demo.Greeter/Hello")(b"", timeout=CALL_TIMEOUT)
    _wait_until(lambda: len(log_lines.events("request.end")) == 4)
    logs = tmp_path / "service.jsonl"
    logs.write_bytes(b"".join(raw + b"\n" for raw in log_lines.raw_lines))

    def exported(*flags: str) -> list[str]:
        out = tmp_path / "traces.json"
        result = CliRunner().invoke(main, ["export", "jaeger", str(logs), "-o", str(out), *flags])
        assert result.exit_code == 0, result.output
        return sorted(
            span["operationName"]
            for trace in json.loads(out.read_text())["data"] for span in trace["spans"]
        )

    # Named as the live spans are (OpenTelemetry's rpc names, no leading slash).
    assert exported() == ["demo.Greeter/Hello"]
    assert exported("--include-health").count("grpc.health.v1.Health/Check") == 3


def test_a_health_watch_behind_opentelemetrys_interceptor_listed_first_is_answered(
    log_lines: LogLines,
) -> None:
    """docs/grpc.md has OpenTelemetry's interceptor listed first. Its wrapper hides the
    Watch's non-blocking mark, so the server calls it without the callback, and
    ridtrace's wrapper, which required it, raised TypeError: every Watch failed UNKNOWN
    (without ridtrace it streams, as a blocking iterator)."""
    from opentelemetry.instrumentation.grpc import server_interceptor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    pool = futures.ThreadPoolExecutor(2)
    server = grpc.server(
        pool,
        interceptors=[server_interceptor(tracer_provider=provider), RequestTracingInterceptor()],
    )
    health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            watch = health_pb2_grpc.HealthStub(channel).Watch(
                health_pb2.HealthCheckRequest(service=""),
                metadata=(("x-request-id", "watch-otel"),),
                timeout=CALL_TIMEOUT,
            )
            assert next(watch).status == SERVING
            [request_id] = metadata_dict(watch.initial_metadata())["x-server-request-id"]
            watch.cancel()
            _wait_until(lambda: bool(log_lines.events("request.end")))
            _wait_until(lambda: len(exporter.get_finished_spans()) == 1)
    finally:
        server.stop(None)
        pool.shutdown(wait=False)
    [end] = log_lines.events("request.end")
    assert (end["request_id"], end["x_request_id"]) == (request_id, "watch-otel")
    assert (end["grpc_status"], end["outcome"]) == ("CANCELLED", "cancelled")
    [span] = exporter.get_finished_spans()  # OpenTelemetry's, enriched: one per call
    assert (span.attributes or {})["request_id"] == request_id
