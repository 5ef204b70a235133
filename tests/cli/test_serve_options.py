"""`ridtrace serve` options that shape shutdown (the behaviour: test_graceful_shutdown_e2e)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.graceful import stop_margin
from ridtrace.cli.main import main
from tests.support.servers import free_port


def test_stop_margin_leaves_most_of_a_short_grace_period_and_two_seconds_of_a_long_one() -> None:
    assert stop_margin(2) == pytest.approx(0.4)
    assert stop_margin(25) == 2.0


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
def test_the_cli_refuses_a_graceful_timeout_that_is_not_positive(
    tmp_path: Path, value: str
) -> None:
    for argv in (["frontend", "--worker", "http://w"], ["worker"]):
        result = CliRunner().invoke(main, ["serve", *argv, "--port", "1", "--log-file",
                                           f"{tmp_path}/x.jsonl", "--graceful-timeout", value])
        assert result.exit_code == 2 and "--graceful-timeout" in result.output, result.output


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "thrift"),
        ("OTEL_TRACES_EXPORTER", "jaeger"),
        # A gRPC-style address sent to the HTTP exporter: every span dropped at runtime.
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"),
        # A propagator whose package is not installed: OpenTelemetry raises on import.
        ("OTEL_PROPAGATORS", "tracecontext,xray"),
        # A span limit that is no count: OpenTelemetry's SDK raises on import.
        ("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "abc"),
    ],
)
def test_an_otel_variable_it_cannot_follow_is_the_operators_error_not_an_internal_one(
    tmp_path: Path, variable: str, value: str
) -> None:
    # It escaped as a traceback and "internal error (exit 4); please report it".
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", variable: value}
    for argv in (["frontend", "--worker", "http://127.0.0.1:9"], ["worker"]):
        done = subprocess.run(
            [sys.executable, "-m", "ridtrace", "serve", *argv, "--port", str(free_port()),
             "--log-file", str(tmp_path / "x.jsonl")],
            env=env, capture_output=True, text=True, timeout=60,
        )
        assert done.returncode == 2, done.stderr  # bad usage, as a bad option
        assert f"{variable}={value!r}" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.extra("grpc")
@pytest.mark.parametrize("alone", ["CLIENT_KEY", "CLIENT_CERTIFICATE"])
def test_a_grpc_client_key_without_its_certificate_is_refused_not_aborted(
    tmp_path: Path, alone: str
) -> None:
    # gRPC's core aborted the process (SIGABRT, "Check failed: cert_chain != nullptr")
    # when given one half of the client's key pair: no line said which variable.
    pem = tmp_path / "half.pem"
    pem.write_bytes(b"-----BEGIN PRIVATE KEY-----\n")
    variable = f"OTEL_EXPORTER_OTLP_{alone}"
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": "https://127.0.0.1:9",
           "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", variable: str(pem)}
    done = subprocess.run(
        [sys.executable, "-m", "ridtrace", "serve", "worker", "--port", str(free_port()),
         "--log-file", str(tmp_path / "x.jsonl")],
        env=env, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert f"{variable}={str(pem)!r}" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("port", ["99999", "65536", "-5"])
def test_a_port_no_socket_can_have_is_refused_before_anything_starts(
    tmp_path: Path, port: str
) -> None:
    # 99999 was cut to 16 bits by the socket layer: the frontend listened on 34463
    # (and said so) instead of refusing the typo; -5 failed only after start-up.
    for argv in (["frontend", "--worker", "http://127.0.0.1:9"], ["worker"]):
        done = subprocess.run(  # a process: one that starts serving is ended by the timeout
            [sys.executable, "-m", "ridtrace", "serve", *argv, "--port", port,
             "--log-file", str(tmp_path / "x.jsonl")],
            capture_output=True, text=True, timeout=30,
        )
        assert done.returncode == 2 and "--port" in done.stderr, done.stderr
        assert not (tmp_path / "x.jsonl").exists()


def test_a_worker_on_port_0_is_named_after_the_port_it_got(tmp_path: Path) -> None:
    # The name was built from --port before uvicorn bound: every worker started with
    # --port 0 was 'worker-0', in Jaeger's service list and in every line's service.
    import re
    import signal

    log = tmp_path / "w.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "ridtrace", "serve", "worker", "--port", "0", "--log-file",
         str(log)], stderr=subprocess.PIPE, text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()  # the one line, once it listens
        found = re.search(r"listening on http://127\.0\.0\.1:(\d+),", line)
        assert found, line
        port = int(found[1])
        assert port != 0
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
    lines = [json.loads(text) for text in log.read_text().splitlines()]
    assert {line["service"] for line in lines} == {f"worker-{port}"}, lines
    # uvicorn's own line saying where it listens, as for any other port.
    assert f"Uvicorn running on http://127.0.0.1:{port} (Press CTRL+C to quit)" in [
        line["message"] for line in lines]
