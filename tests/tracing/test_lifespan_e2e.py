"""A user's app under a real uvicorn, stopped by SIGTERM: ``telemetry_lifespan`` delivers
what the batch processor and the metric reader held (uvicorn re-raises the signal after
its graceful shutdown, so ``atexit`` never would)."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.otlp_receiver import otlp_receiver
from tests.support.servers import free_port, run_server


def _users_app(
    module: str, endpoint: str, workdir: Path, extra_env: dict[str, str] | None = None
) -> Any:
    """A user's app (`module`'s ``create_app``) under uvicorn, exporting to `endpoint`
    with batches and metric exports held back for longer than any test runs."""
    port = free_port()
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "120000", "OTEL_METRIC_EXPORT_INTERVAL": "120000",
        **(extra_env or {}),
    }
    argv = ["-m", "uvicorn", f"{module}:create_app", "--factory",
            "--host", "127.0.0.1", "--port", str(port)]
    return run_server(argv, port=port, workdir=workdir, env=env, ready_path="/items/ready")


def _get_items(url: str, prefix: str, count: int) -> None:
    for i in range(count):
        response = httpx.get(f"{url}/items/{i}", headers={"x-request-id": f"{prefix}-{i}"})
        assert response.status_code == 200


def test_sigterm_flushes_a_users_app(tmp_path: Path) -> None:
    with otlp_receiver() as receiver:
        with _users_app("tests.tracing.lifespan_app", receiver.endpoint, tmp_path) as server:
            _get_items(server.url, "u", 4)
            assert receiver.spans == [] and receiver.metric_exports == 0
        assert server.process.returncode is not None
        spans = receiver.wait_for(5, timeout=10)
        ours = sorted(s.attributes["x_request_id"] for s in spans if "x_request_id" in s.attributes)
        assert ours == ["u-0", "u-1", "u-2", "u-3"]
        assert {s.service_name for s in spans} == {"users-app"}
        receiver.wait_for_metric_exports(1, timeout=10)
        assert receiver.metric("ridtrace.requests", "users-app", route="/items/{item}", outcome="ok") == 5


def test_an_applications_own_providers_are_used_not_doubled(tmp_path: Path) -> None:
    # configure_metrics built a second meter provider beside the application's: ridtrace's
    # metrics never reached the application's readers and went out under another
    # resource, through a second exporter.
    with otlp_receiver() as receiver:
        with _users_app("tests.tracing.own_providers_app", receiver.endpoint, tmp_path) as server:
            _get_items(server.url, "o", 3)
        assert server.process.returncode is not None
        spans = receiver.wait_for(4, timeout=10)
        receiver.wait_for_metric_exports(1, timeout=10)
    ours = sorted(s.attributes["x_request_id"] for s in spans if "x_request_id" in s.attributes)
    assert ours == ["o-0", "o-1", "o-2"]
    assert {s.service_name for s in spans} == {"apps-own"}
    assert receiver.metric("ridtrace.requests", "apps-own", route="/items/{item}", outcome="ok") == 4
    assert {service for service, _, _ in receiver.metrics} == {"apps-own"}


def test_fastapis_automatic_export_adds_no_second_exporter_to_ridtraces(tmp_path: Path) -> None:
    # FASTAPI_OTEL_AUTO_CONFIGURE=true makes FastAPI add an OTLP exporter of its own to
    # the global providers at its lifespan startup, whatever they export already: beside
    # configure_tracing / configure_metrics every span and every metric export reached
    # the collector twice (3 requests: 6 spans, 2 exports of the same series).
    with otlp_receiver() as receiver:
        with _users_app("tests.tracing.lifespan_app", receiver.endpoint, tmp_path,
                        {"FASTAPI_OTEL_AUTO_CONFIGURE": "true"}) as server:
            _get_items(server.url, "f", 3)
        assert server.process.returncode is not None
        # The process exited after its last export was answered: all of them are in.
        spans = receiver.wait_for(4, timeout=10)
        receiver.wait_for_metric_exports(1, timeout=10)
    ours = sorted(s.attributes["x_request_id"] for s in spans if "x_request_id" in s.attributes)
    assert ours == ["f-0", "f-1", "f-2"]
    assert len({s.span_id for s in spans}) == len(spans)
    assert receiver.metric_exports == 1


@pytest.mark.parametrize("fastapi_telemetry", ["on", "off"])
def test_a_request_cancelled_by_the_graceful_timeout_keeps_its_span(
    tmp_path: Path, fastapi_telemetry: str
) -> None:
    # uvicorn cancels what outlives timeout_graceful_shutdown right before the lifespan
    # shutdown; the cancelled request ended its span while the provider was shutting
    # down, and the span was dropped: the request was missing from every trace.
    with otlp_receiver() as receiver:
        port = free_port()
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "120000", "OTEL_METRIC_EXPORT_INTERVAL": "120000",
            "LIFESPAN_APP_FASTAPI_TELEMETRY": fastapi_telemetry,
        }
        argv = ["-m", "uvicorn", "tests.tracing.lifespan_app:create_app", "--factory",
                "--host", "127.0.0.1", "--port", str(port), "--timeout-graceful-shutdown", "1"]
        with run_server(argv, port=port, workdir=tmp_path, env=env, ready_path="/items/ready") as server, \
                httpx.stream("GET", f"{server.url}/stream", headers={"x-request-id": "cut"},
                              timeout=30) as response:
            chunks = response.iter_raw()
            next(chunks)  # the stream is running
            server.process.send_signal(signal.SIGTERM)
            with contextlib.suppress(httpx.HTTPError):
                for _ in chunks:  # until the server cuts it
                    pass
            server.process.wait(timeout=30)
        spans = receiver.wait_for(2, timeout=10)
    cut = [s for s in spans if s.attributes.get("x_request_id") == "cut"]
    assert len(cut) == 1, [(s.name, s.attributes) for s in spans]
    assert cut[0].kind == 2 and cut[0].attributes["http.route"] == "/stream"


def _cut_off_by_sigterm(workdir: Path, endpoint: str, extra_env: dict[str, str],
                        **slow_request: Any) -> None:
    """A user's app with a 1 s graceful timeout, stopped by SIGTERM while one GET /slow
    (`slow_request`: httpx arguments) waits in the app; returns once it has exited."""
    port = free_port()
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "120000", "OTEL_METRIC_EXPORT_INTERVAL": "120000",
        "LIFESPAN_APP_FASTAPI_TELEMETRY": "off", **extra_env,
    }
    argv = ["-m", "uvicorn", "tests.tracing.lifespan_app:create_app", "--factory",
            "--host", "127.0.0.1", "--port", str(port), "--timeout-graceful-shutdown", "1"]
    with run_server(argv, port=port, workdir=workdir, env=env, ready_path="/items/ready") as server:

        def call() -> None:
            with contextlib.suppress(httpx.HTTPError):
                httpx.get(f"{server.url}/slow", timeout=30, **slow_request)

        caller = threading.Thread(target=call)
        caller.start()
        deadline = time.monotonic() + 30
        while httpx.get(f"{server.url}/slow/waiting").json()["waiting"] < 1:
            assert time.monotonic() < deadline, "the request never reached the app"
            time.sleep(0.02)
        server.process.send_signal(signal.SIGTERM)
        caller.join()
        server.process.wait(timeout=30)


def test_a_request_cancelled_before_it_answered_has_no_response_status(tmp_path: Path) -> None:
    # Its span said http.response.status_code 0, a status no response had: the
    # conventions set it only once a response is sent (uvicorn's own 500 after the
    # cancellation goes out past the app).
    with otlp_receiver() as receiver:
        _cut_off_by_sigterm(tmp_path, receiver.endpoint, {},
                            headers={"x-request-id": "unanswered"})
        spans = receiver.wait_for(3, timeout=10)
    (cut,) = [s for s in spans if s.attributes.get("x_request_id") == "unanswered"]
    assert "http.response.status_code" not in cut.attributes, cut.attributes
    assert cut.attributes["http.route"] == "/slow"


@pytest.mark.parametrize("variable", ["OTEL_TRACES_EXPORTER=none", "OTEL_TRACES_SAMPLER=always_off"])
def test_a_cancelled_request_is_counted_when_no_span_records_it(
    tmp_path: Path, variable: str
) -> None:
    # Shutdown waited only for requests whose span recorded: with metrics exported and
    # spans not (OTEL_TRACES_EXPORTER=none, or the request sampled out), a request the
    # graceful timeout cancelled ended after the final metric export and was counted
    # nowhere (uvicorn's cancellation reaches the app a few loop turns later, and an app
    # may still await its clean-up).
    name, _, value = variable.partition("=")
    with otlp_receiver() as receiver:
        _cut_off_by_sigterm(tmp_path, receiver.endpoint, {name: value},
                            params={"cleanup": "0.2"})
        receiver.wait_for_metric_exports(1, timeout=10)
        assert receiver.spans == []
        assert receiver.metric("ridtrace.requests", route="/slow", outcome="cancelled") == 1
