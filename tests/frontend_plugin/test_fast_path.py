"""The frontend app's fast path: inference POSTs skip FastAPI's stack, the rest keeps it.

A user middleware added last (outermost) holds on to each request's scope: Starlette's
router writes ``scope["router"]``, so a request it routed is told apart from one the
fast path served. The tracing middleware must still name the route.
"""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import httpx
import orjson
from starlette.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send

from ridtrace.frontend_plugin import FrontendSettings, create_frontend_app
from ridtrace.tracing import TracingSettings


class KeepScopes:
    """Records every HTTP scope after the app is done with it."""

    seen: list[dict[str, Any]] = []  # noqa: RUF012  # one test at a time

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)
        if scope["type"] == "http":
            KeepScopes.seen.append(scope)


def _requests(settings: FrontendSettings, *calls: tuple[str, str, bytes | None]
              ) -> list[tuple[httpx.Response, dict[str, Any]]]:
    app = create_frontend_app(settings, tracing=TracingSettings(log_lifecycle=False))
    app.add_middleware(KeepScopes)
    KeepScopes.seen = []

    async def run() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://fe") as client:
            return [await client.request(method, path, content=body,
                                         headers={"content-type": "application/json"})
                    for method, path, body in calls]

    responses = asyncio.run(run())
    return list(zip(responses, KeepScopes.seen, strict=True))


def test_inference_posts_skip_the_router_and_keep_their_route_and_ids() -> None:
    body = orjson.dumps({"prompt": "hi", "max_tokens": 2})
    results = _requests(
        FrontendSettings(workers=()),  # no worker: the full call path, ending in a 503
        ("POST", "/v1/completions", body),
        ("POST", "/v1/chat/completions", b"{not json"),
    )
    (no_worker, first), (bad, second) = results
    assert no_worker.status_code == 503 and no_worker.json()["error"]["type"] == "server_error"
    assert bad.status_code == 400 and "invalid JSON" in bad.json()["error"]["message"]
    for response, scope in results:
        assert "router" not in scope  # served by the fast path
        assert response.headers["x-server-request-id"]  # the tracing middleware ran around it
    assert first["route"].path == "/v1/completions"
    assert second["route"].path == "/v1/chat/completions"


def test_everything_else_still_goes_through_fastapi() -> None:
    results = _requests(
        FrontendSettings(workers=(), debug_endpoints=True),  # which serves the docs
        ("GET", "/health", None),
        ("GET", "/v1/completions", None),
        ("GET", "/openapi.json", None),
        ("GET", "/docs", None),
    )
    statuses = [response.status_code for response, _ in results]
    assert statuses == [503, 405, 200, 200]  # /health: no workers configured, unavailable
    assert all("router" in scope for _, scope in results)
    assert all(response.headers["x-server-request-id"] for response, _ in results)


def test_startup_freezes_the_heap_out_of_the_collectors_walks() -> None:
    gc.unfreeze()
    try:
        app = create_frontend_app(FrontendSettings(workers=()),
                                  tracing=TracingSettings(log_lifecycle=False))
        assert gc.get_freeze_count() == 0
        with TestClient(app) as client:
            assert gc.get_freeze_count() > 0
            assert client.get("/v1/models").status_code == 200
    finally:
        gc.unfreeze()
