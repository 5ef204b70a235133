"""An app served twice in one process exports both times.

Configured once, at import, and served by two lifespans (two ``with TestClient(app)``
blocks, a test fixture per test, an in-process server started again): the first
lifespan's end shut the global providers down, OpenTelemetry lets no other take their
place, and every span and metric of the second was dropped without a word.
"""

from __future__ import annotations

import os
import subprocess
import sys
from subprocess import CompletedProcess

import pytest

from tests.support.otlp_receiver import OtlpReceiver, otlp_receiver

_APP = """
import sys
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.responses import PlainTextResponse
from ridtrace import (RequestTracingMiddleware, configure_metrics, configure_tracing,
                      telemetry_lifespan)

configure_tracing("twice")
configure_metrics("twice")
if sys.argv[1] == "fastapi":
    app = FastAPI(lifespan=telemetry_lifespan, telemetry={"tracing": False, "metrics": False,
                                                          "logs": False})
    app.add_middleware(RequestTracingMiddleware)

    @app.get("/hello")
    def hello() -> str:
        return "hi"
else:  # a bare ASGI app: the middleware's own lifespan handling flushes it
    async def bare(scope, receive, send):
        assert scope["type"] == "http"
        await PlainTextResponse("hi")(scope, receive, send)

    app = RequestTracingMiddleware(bare)
for block in ("block-1", "block-2", "block-3"):
    with TestClient(app) as client:
        assert client.get("/hello", headers={"x-request-id": block}).status_code == 200
"""


def _run_exporting(receiver: OtlpReceiver, program: str, *args: str) -> CompletedProcess[str]:
    """`program` run to its end with its telemetry sent to `receiver` only at shutdown
    (batches and metric exports far apart): what arrives, its lifespans' ends sent."""
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
           "OTEL_BSP_SCHEDULE_DELAY": "120000", "OTEL_METRIC_EXPORT_INTERVAL": "120000"}
    for name in ("OTEL_SERVICE_NAME", "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER",
                 "OTEL_METRICS_EXPORTER"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-c", program, *args], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.mark.parametrize("kind", ["fastapi", "bare"])
def test_every_lifespan_of_one_process_exports_its_spans_and_metrics(kind: str) -> None:
    with otlp_receiver() as receiver:
        done = _run_exporting(receiver, _APP, kind)
        spans = receiver.wait_for(3, timeout=10)
        receiver.wait_for_metric_exports(3, timeout=10)
    ids = sorted(s.attributes["x_request_id"] for s in spans if "x_request_id" in s.attributes)
    assert ids == ["block-1", "block-2", "block-3"]
    assert "Overriding of current" not in done.stderr
    # Each lifespan's own provider counts its own request: the last export says one.
    assert receiver.metric("ridtrace.requests", "twice", outcome="ok") == 1


_TWO_APPS = """
from fastapi import FastAPI
from fastapi.testclient import TestClient
from ridtrace import (RequestTracingMiddleware, configure_metrics, configure_tracing,
                      telemetry_lifespan)

configure_tracing("two-apps")
configure_metrics("two-apps")


def app(name):
    served = FastAPI(lifespan=telemetry_lifespan,
                     telemetry={"tracing": False, "metrics": False, "logs": False})
    served.add_middleware(RequestTracingMiddleware)
    served.add_api_route(f"/{name}", lambda: name, methods=["GET"])
    return served


with TestClient(app("admin")) as admin:
    with TestClient(app("public")) as public:
        assert public.get("/public", headers={"x-request-id": "public-before"}).status_code == 200
        assert admin.get("/admin", headers={"x-request-id": "admin"}).status_code == 200
    for n in range(3):  # the public app stopped; the admin port serves on
        assert admin.get("/admin", headers={"x-request-id": f"admin-after-{n}"}).status_code == 200
"""


def test_an_app_stopping_leaves_telemetry_to_another_still_serving() -> None:
    # A public API and an admin port in one process, each with telemetry_lifespan: the
    # first to stop shut the global providers down under the other, whose later spans
    # and counts were dropped ("Shutdown called, ignoring Span.").
    with otlp_receiver() as receiver:
        _run_exporting(receiver, _TWO_APPS)
        spans = receiver.wait_for(5, timeout=10)
        receiver.wait_for_metric_exports(1, timeout=10)
    ids = sorted(s.attributes["x_request_id"] for s in spans if "x_request_id" in s.attributes)
    assert ids == ["admin", "admin-after-0", "admin-after-1", "admin-after-2", "public-before"]
    assert receiver.metric("ridtrace.requests", "two-apps", outcome="ok", route="/admin") == 4
