"""`ridtrace serve` keeps gRPC's core lines off stderr: everything goes to the log file.

An OTLP/gRPC endpoint given without a scheme is TLS; against a plaintext collector each
export's handshake failed, and gRPC's core printed an ``I1205 … Handshake failed`` line
to stderr per retry, beside the one line `serve` writes there once it listens. The
exporter's own ERROR in the log file says the same.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support.otlp_receiver import otlp_grpc_receiver
from tests.support.servers import child_pythonpath, free_port

pytestmark = pytest.mark.extra("grpc")


def test_a_tls_handshake_to_a_plaintext_collector_is_said_in_the_log_only(
    tmp_path: Path,
) -> None:
    port = free_port()
    log = tmp_path / "worker.jsonl"
    with otlp_grpc_receiver() as receiver:
        env = {key: value for key, value in os.environ.items() if key != "GRPC_VERBOSITY"}
        env.update(PYTHONPATH=child_pythonpath(), OTEL_EXPORTER_OTLP_PROTOCOL="grpc",
                   OTEL_EXPORTER_OTLP_ENDPOINT=f"127.0.0.1:{receiver.port}",
                   OTEL_EXPORTER_OTLP_TIMEOUT="2", OTEL_BSP_SCHEDULE_DELAY="50",
                   OTEL_METRICS_EXPORTER="none")
        worker = subprocess.Popen(
            [sys.executable, "-m", "ridtrace", "serve", "worker", "--port", str(port),
             "--log-file", str(log)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        try:
            assert worker.stderr is not None
            listening = worker.stderr.readline().decode()
            assert f"listening on http://127.0.0.1:{port}" in listening, listening
            deadline = time.monotonic() + 60
            while "Failed to export traces" not in log.read_text():
                assert time.monotonic() < deadline, "the exporter never failed"
                httpx.get(f"http://127.0.0.1:{port}/health", timeout=30)
                time.sleep(0.2)
        finally:
            worker.send_signal(signal.SIGTERM)
            _, err = worker.communicate(timeout=60)
    assert worker.returncode == 0
    assert err.decode() == "", err.decode()
