"""Route names (request.end's ``route``, the span's ``http.route``, the metric's
``route``) in a FastAPI app split into routers and sub-apps, behind a real uvicorn."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.otlp_receiver import OtlpReceiver
from tests.support.servers import RunningServer
from tests.tracing.conftest import app_server, wait_for_lines


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, receiver: OtlpReceiver
) -> Iterator[tuple[RunningServer, Path]]:
    workdir = tmp_path_factory.mktemp("routers")
    with app_server(workdir, receiver, app="tests.tracing.routers_app:create_app",
                    ready_path="/items/ready",
                    env={"OTEL_METRIC_EXPORT_INTERVAL": "100"}) as running:
        yield running, workdir / "app.jsonl"


def _route_of(running: RunningServer, log_path: Path, receiver: OtlpReceiver, path: str) -> str:
    """The route request.end and the span give one request of ``path`` (they must agree)."""
    response = httpx.get(running.url + path, timeout=10)
    assert response.status_code == 200, (path, response.text)
    request_id = response.headers["x-server-request-id"]
    lines = wait_for_lines(log_path, lambda lines: any(
        line.get("event") == "request.end" and line.get("request_id") == request_id
        for line in lines
    ))
    (end,) = [x for x in lines if x.get("event") == "request.end"
              and x.get("request_id") == request_id]
    spans = receiver.wait_until(
        lambda spans: any(s.attributes.get("request_id") == request_id for s in spans)
    )
    (span,) = [s for s in spans if s.attributes.get("request_id") == request_id]
    assert span.attributes["http.route"] == end["route"], json.dumps(end)
    return str(end["route"])


def test_routes_of_routers_included_with_a_prefix_are_named_with_it(
    server: tuple[RunningServer, Path], receiver: OtlpReceiver
) -> None:
    # app.include_router(users, prefix="/users"), the way FastAPI apps are split up:
    # FastAPI serves the router's own route, whose path lacks the prefix, so /users/7
    # and /items/7 were both named /{key}, one series in the metric and one name in
    # Jaeger, while FastAPI's own span and OpenTelemetry's instrumentation name them
    # /users/{key} and /items/{key}.
    running, log_path = server
    assert _route_of(running, log_path, receiver, "/users/7") == "/users/{key}"
    assert _route_of(running, log_path, receiver, "/items/7") == "/items/{key}"
    assert _route_of(running, log_path, receiver, "/admin/users/7") == "/admin/users/{key}"
    # A mounted sub-app's router: the mount, then the router's prefix.
    assert (
        _route_of(running, log_path, receiver, "/billing/v1/invoices/3")
        == "/billing/v1/invoices/{number}"
    )
    # The metric: one snapshot of every series per export, so once the last request's
    # series is in, the others' are too.
    named = ("/users/{key}", "/admin/users/{key}", "/billing/v1/invoices/{number}")
    receiver.wait_until(lambda _: all(
        receiver.metric("ridtrace.requests", route=route) >= 1 for route in named
    ))
    assert receiver.metric("ridtrace.requests", route="/{key}") == 0


def test_a_plain_asgi_app_mounted_in_a_fastapi_app_is_named_by_its_mount(
    server: tuple[RunningServer, Path], receiver: OtlpReceiver
) -> None:
    # app.mount("/prometheus", make_asgi_app()), or StaticFiles: FastAPI's router leaves
    # no route in the scope for a mount (Starlette's leaves the Mount), so such requests
    # had no route on request.end or the span and were counted under "unmatched".
    running, log_path = server
    assert _route_of(running, log_path, receiver, "/prometheus/") == "/prometheus"
    assert _route_of(running, log_path, receiver, "/prometheus/metrics") == "/prometheus"
    receiver.wait_until(
        lambda _: receiver.metric("ridtrace.requests", route="/prometheus") >= 2
    )


def test_a_sub_app_mounted_on_a_router_included_with_a_prefix_is_named_with_both(
    server: tuple[RunningServer, Path], receiver: OtlpReceiver
) -> None:
    # router.mount("/reports", reports); app.include_router(router, prefix="/team"): the
    # mount is kept inside FastAPI's included router, where the mounts were not looked
    # for, so the sub-app's routes were named without it (/daily/{day}).
    running, log_path = server
    assert (
        _route_of(running, log_path, receiver, "/team/reports/daily/mon")
        == "/team/reports/daily/{day}"
    )


def test_starlette_routes_in_a_fastapi_app_are_named_by_their_template(
    server: tuple[RunningServer, Path], receiver: OtlpReceiver
) -> None:
    # app.add_route (a Starlette route, as FastAPI serves /docs and /openapi.json):
    # FastAPI's router, unlike Starlette's, leaves no route in the scope for one, so its
    # requests had no route on request.end or the span and were counted "unmatched",
    # beside the 404s, though FastAPI's own telemetry names them.
    running, log_path = server
    assert _route_of(running, log_path, receiver, "/plain/a") == "/plain/{name}"
    assert _route_of(running, log_path, receiver, "/assets/logo") == "/assets/{name}"
    assert _route_of(running, log_path, receiver, "/billing/status") == "/billing/status"
    assert _route_of(running, log_path, receiver, "/docs") == "/docs"
    named = ("/plain/{name}", "/assets/{name}", "/billing/status", "/docs")
    receiver.wait_until(lambda _: all(
        receiver.metric("ridtrace.requests", route=route) >= 1 for route in named
    ))
    assert receiver.metric("ridtrace.requests", route="unmatched") == 0
