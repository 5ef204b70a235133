"""Several uvicorn servers in one process, and a server started again after a failed
startup: a SIGTERM loses none of their spans.

Of several servers, the last to stop shuts telemetry down (`lifecycle.service_ended`):
one that stops first must still export what the providers hold, as uvicorn raises the
signal again once its server stopped, and the other server's thread never gets to stop.
And a server whose app's startup failed sends no shutdown: counted at its startup, it
kept the count up for good, and the telemetry of the server started after it was never
shut down (0 spans of 6 at SIGTERM).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import httpx

from tests.support.otlp_receiver import OtlpReceiver, otlp_receiver
from tests.support.servers import free_port, wait_until_serving

_TWO_SERVERS = """
import sys, threading
import uvicorn
from fastapi import FastAPI
from ridtrace import RequestTracingMiddleware, configure_tracing

configure_tracing("several")


def app(name):
    served = FastAPI(telemetry={"tracing": False, "metrics": False, "logs": False})
    served.add_api_route("/hi", lambda: name, methods=["GET"])
    served.add_middleware(RequestTracingMiddleware)
    return served


public = uvicorn.Server(uvicorn.Config(app("public"), host="127.0.0.1", port=int(sys.argv[1]),
                                       log_level="warning"))
threading.Thread(target=public.run, daemon=True).start()
uvicorn.Server(uvicorn.Config(app("admin"), host="127.0.0.1", port=int(sys.argv[2]),
                              log_level="warning")).run()
"""

_RETRIED = """
import sys
from contextlib import asynccontextmanager
import uvicorn
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from ridtrace import RequestTracingMiddleware, configure_tracing

configure_tracing("retried")
starts = 0


@asynccontextmanager
async def lifespan(app):
    global starts
    starts += 1
    if starts == 1:
        raise RuntimeError("database not ready yet")
    yield


app = Starlette(routes=[Route("/hi", lambda request: PlainTextResponse("hi"))],
                lifespan=lifespan)
app.add_middleware(RequestTracingMiddleware)
while True:  # served again until it starts, as a supervisor in process would
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=int(sys.argv[1]),
                                           log_level="critical"))
    try:
        server.run()
    except SystemExit:
        pass
    if server.started:
        break
"""


def _spans_after_sigterm(receiver: OtlpReceiver, program: str, ports: list[int],
                         calls: int, *args: str) -> list[str]:
    """`program` serving on `ports` (then `args`), `calls` requests to each, then
    SIGTERM, and it ends: the client ids of the spans the receiver got."""
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
           "OTEL_BSP_SCHEDULE_DELAY": "120000", "OTEL_METRIC_EXPORT_INTERVAL": "120000"}
    for name in ("OTEL_SERVICE_NAME", "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER"):
        env.pop(name, None)
    process = subprocess.Popen([sys.executable, "-c", program, *map(str, ports), *args], env=env,
                               stderr=subprocess.DEVNULL)
    try:
        with httpx.Client(timeout=10) as client:
            for port in ports:
                wait_until_serving(f"http://127.0.0.1:{port}", process, path="/hi")
                for n in range(calls):
                    answer = client.get(f"http://127.0.0.1:{port}/hi",
                                        headers={"x-request-id": f"{port}-{n}"})
                    assert answer.status_code == 200
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    finally:
        process.kill()
    expected = len(ports) * calls
    spans = receiver.wait_until(lambda got: sum(
        str(s.attributes.get("x_request_id", "")).count("-") == 1 for s in got) >= expected,
        timeout=15)
    return sorted(str(s.attributes["x_request_id"]) for s in spans
                  if str(s.attributes.get("x_request_id", "")).count("-") == 1)


def test_two_servers_in_one_process_lose_no_span_at_sigterm() -> None:
    ports = [free_port(), free_port()]
    with otlp_receiver() as receiver:
        got = _spans_after_sigterm(receiver, _TWO_SERVERS, ports, 3)
    assert got == sorted(f"{port}-{n}" for port in ports for n in range(3))


def test_a_server_started_again_after_a_failed_startup_loses_no_span_at_sigterm() -> None:
    port = free_port()
    with otlp_receiver() as receiver:
        got = _spans_after_sigterm(receiver, _RETRIED, [port], 4)
    assert got == [f"{port}-{n}" for n in range(4)]


_HTTP_BESIDE_GRPC = """
import asyncio, sys
import grpc.aio, uvicorn
from fastapi import FastAPI
from ridtrace import RequestTracingMiddleware, configure_tracing
from ridtrace.tracing.grpc import RequestTracingInterceptor, serve_until_signalled

configure_tracing("beside")
app = FastAPI(telemetry={"tracing": False, "metrics": False, "logs": False})
app.add_api_route("/hi", lambda: "hi", methods=["GET"])
app.add_middleware(RequestTracingMiddleware)


async def main():
    grpc_server = grpc.aio.server(interceptors=[RequestTracingInterceptor()])
    grpc_server.add_insecure_port("127.0.0.1:0")
    http = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=int(sys.argv[1]),
                                         log_level="warning"))
    serving = [http.serve(), serve_until_signalled(grpc_server)]
    await asyncio.gather(*(serving if sys.argv[2] == "http-first" else serving[::-1]))


asyncio.run(main())
"""


def test_an_http_app_beside_a_grpc_server_stops_on_sigterm_whichever_starts_first() -> None:
    # serve_until_signalled took SIGTERM over from uvicorn's handler when it started
    # second: gRPC stopped, and the process went on serving HTTP until killed.
    for order in ("http-first", "grpc-first"):
        port = free_port()
        with otlp_receiver() as receiver:
            got = _spans_after_sigterm(receiver, _HTTP_BESIDE_GRPC, [port], 2, order)
        assert got == [f"{port}-0", f"{port}-1"], order
