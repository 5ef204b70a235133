"""A gRPC server stopped by SIGTERM still delivers its spans and metrics: a grpc.aio one
through serve_until_signalled, a synchronous one as docs/grpc.md shows."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from tests.support.otlp_receiver import OtlpReceiver, otlp_receiver
from tests.support.servers import child_pythonpath, free_port

METHOD = "/demo.Greeter/Hello"


def _call_until_serving(target: str, process: subprocess.Popen[bytes], ids: list[str]) -> None:
    deadline = time.monotonic() + 30
    with grpc.insecure_channel(target) as channel:
        # One future, waited on in steps: a new one per step left the earlier ones
        # subscribed, and grpc's polling thread then met the closed channel
        # ("ValueError: Channel closed!", an unhandled thread exception).
        ready = grpc.channel_ready_future(channel)
        while True:
            assert process.poll() is None, "server exited before serving"
            try:
                ready.result(timeout=0.5)
                break
            except grpc.FutureTimeoutError:
                assert time.monotonic() < deadline, "server never became ready"
        call = channel.unary_unary(METHOD)
        for client_id in ids:
            assert call(b"", metadata=(("x-request-id", client_id),), timeout=10) == b"hello"


@contextlib.contextmanager
def _signalled_server(
    tmp_path: Path, receiver: OtlpReceiver, kind: str, service: str
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """`signalled_server` exporting to `receiver` with batches that only a flush sends;
    killed at the end if it is still running."""
    port = free_port()
    env = {
        **os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "120000", "OTEL_METRIC_EXPORT_INTERVAL": "120000",
        "OTEL_SERVICE_NAME": service,
        # This checkout's code and tests, from wherever pytest was started.
        "PYTHONPATH": child_pythonpath(),
    }
    with (tmp_path / "server.stderr").open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.tracing.grpc.signalled_server", str(port), kind],
            env=env, stdout=subprocess.DEVNULL, stderr=stderr,
        )
        try:
            yield process, port
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


@pytest.mark.parametrize(
    ("kind", "signum"),
    [
        ("aio", signal.SIGTERM),
        ("sync", signal.SIGTERM),
        # A terminal or ssh session closing: serve_until_signalled stops as on SIGTERM
        # (its spans and metrics were lost with the process), as ridtrace serve does.
        ("aio", signal.SIGHUP),
        # Supervisors set up the nginx way stop with SIGQUIT, which dumped core.
        ("aio", signal.SIGQUIT),
        # Ctrl-C under asyncio.run (docs/grpc.md's example): passed on to asyncio's own
        # handler, it cancelled the stop itself (exit by KeyboardInterrupt, spans lost).
        ("aio", signal.SIGINT),
    ],
    ids=["aio", "sync", "aio-sighup", "aio-sigquit", "aio-sigint"],
)
def test_sigterm_flushes_spans_and_metrics(
    tmp_path: Path, kind: str, signum: signal.Signals
) -> None:
    if signal.getsignal(signum) == signal.SIG_IGN:
        pytest.skip(f"{signum.name} is ignored here (nohup), and so in the server")
    ids = [f"g-{i}" for i in range(5)]
    with otlp_receiver() as receiver:
        with _signalled_server(tmp_path, receiver, kind, "grpc-from-env") as (process, port):
            _call_until_serving(f"127.0.0.1:{port}", process, ids)
            assert receiver.spans == [] and receiver.metric_exports == 0
            process.send_signal(signum)
            assert process.wait(timeout=30) == 0, (tmp_path / "server.stderr").read_text()
        spans = receiver.wait_for(len(ids), timeout=10)
        assert sorted(s.attributes["x_request_id"] for s in spans) == ids
        assert {s.service_name for s in spans} == {"grpc-from-env"}
        receiver.wait_for_metric_exports(1, timeout=10)
        assert receiver.metric("ridtrace.requests", "grpc-from-env", route=METHOD, outcome="ok") == 5


def test_a_synchronous_servers_cut_off_call_reaches_the_collector(tmp_path: Path) -> None:
    """docs/grpc.md's recipe for a synchronous server: its wait_for_termination() returns
    once gRPC cancelled a call the stop cut off, while the handler still unwinds in the
    pool. shutdown_telemetry() flushed before that call's span and count existed: both
    were lost."""
    with otlp_receiver() as receiver:
        with _signalled_server(tmp_path, receiver, "sync", "grpc-cut-off") as (process, port):
            _call_until_serving(f"127.0.0.1:{port}", process, ["ready"])
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                stream = channel.unary_stream("/demo.Greeter/Trickle")(
                    b"", metadata=(("x-request-id", "cut-off"),), timeout=30
                )
                assert next(stream) == b"first"
                process.send_signal(signal.SIGTERM)
                with pytest.raises(grpc.RpcError) as raised:
                    next(stream)
                assert raised.value.code() is grpc.StatusCode.UNAVAILABLE
            assert process.wait(timeout=30) == 0, (tmp_path / "server.stderr").read_text()
        spans = receiver.wait_for(2, timeout=10)
        assert sorted(s.attributes["x_request_id"] for s in spans) == ["cut-off", "ready"]
        receiver.wait_for_metric_exports(1, timeout=10)
        route = "/demo.Greeter/Trickle"
        assert receiver.metric("ridtrace.requests", "grpc-cut-off", route=route,
                               outcome="cancelled") == 1
