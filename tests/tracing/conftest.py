"""Fixtures for the tracing tests: log capture and a real server under test."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from loguru import logger
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from ridtrace.tracing import metrics, shutdown_telemetry
from ridtrace.tracing.deprecation import reset_warnings
from ridtrace.tracing.logs import configure_logging
from tests.support.otlp_receiver import OtlpReceiver, otlp_receiver
from tests.support.servers import RunningServer, child_pythonpath, free_port, run_server

REPO_ROOT = Path(__file__).resolve().parents[2]


def read_lines(path: Path) -> list[dict[str, Any]]:
    """Every line must be exactly one JSON object: that is the log contract."""
    text = path.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def _written_in_full(path: Path) -> list[dict[str, Any]]:
    """The lines of a log a running server writes, up to its last newline: a read may
    meet a write part way through (the kernel copies a write page by page, and a reader
    can see the first page of it), and that unfinished line (maybe cut inside a UTF-8
    character) is left for the next look, not parsed as a broken one."""
    if not path.exists():
        return []
    whole = path.read_bytes().rpartition(b"\n")[0].decode("utf-8")
    return [json.loads(line) for line in whole.splitlines()]


def wait_for_lines(
    path: Path, predicate: Callable[[list[dict[str, Any]]], bool], *, timeout: float = 20.0
) -> list[dict[str, Any]]:
    """Poll the log until ``predicate`` holds (the server writes asynchronously to us)."""
    deadline = time.monotonic() + timeout
    while True:
        lines = _written_in_full(path)
        if predicate(lines):
            return lines
        if time.monotonic() > deadline:
            raise AssertionError(f"log never satisfied the condition; {len(lines)} lines")
        time.sleep(0.05)


@pytest.fixture(autouse=True)
def _fresh_loguru() -> Iterator[None]:
    reset_warnings()
    logger.remove()
    yield
    logger.remove()


@pytest.fixture
def telemetry_shut_down() -> Iterator[None]:
    """After the test, the providers it configured are shut down and unbound, so the
    next test of the worker configures its own (``pytest.mark.usefixtures``)."""
    yield
    shutdown_telemetry()
    metrics.bind_meter_provider(None)


@pytest.fixture
def log_file(tmp_path: Path) -> Path:
    path = tmp_path / "app.jsonl"
    configure_logging(path, service="test", level="DEBUG", intercept_stdlib=False)
    return path


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    """A real OTLP/HTTP receiver on loopback, one per test module."""
    with otlp_receiver() as running:
        yield running


@pytest.fixture
def reader() -> Iterator[InMemoryMetricReader]:
    """An in-memory metric reader bound as ridtrace's meter provider for one test."""
    reader = InMemoryMetricReader()
    metrics.bind_meter_provider(MeterProvider(metric_readers=[reader]))
    yield reader
    metrics.bind_meter_provider(None)


@contextlib.contextmanager
def app_server(
    workdir: Path, receiver: OtlpReceiver, *uvicorn_options: str,
    app: str = "tests.tracing.app_under_test:create_app", ready_path: str = "/",
    env: dict[str, str] | None = None,
) -> Iterator[RunningServer]:
    """A test app (`app`, a factory) under uvicorn, logging to ``workdir/app.jsonl``,
    spans to `receiver`; `env` adds to its environment."""
    port = free_port()
    child_env = {
        "RIDTRACE_TEST_LOG": str(workdir / "app.jsonl"),
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "50",
        "PYTHONPATH": child_pythonpath(),
        **(env or {}),
    }
    argv = [
        "-m", "uvicorn", app, "--factory",
        "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
        *uvicorn_options,
    ]  # fmt: skip
    with run_server(argv, port=port, workdir=workdir, env=child_env,
                    ready_path=ready_path) as running:
        yield running


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, receiver: OtlpReceiver
) -> Iterator[tuple[RunningServer, Path]]:
    """`app_under_test` under uvicorn for a test module, with its log's path (a module
    that needs another app defines its own `server`)."""
    workdir = tmp_path_factory.mktemp("server")
    with app_server(workdir, receiver) as running:
        yield running, workdir / "app.jsonl"
