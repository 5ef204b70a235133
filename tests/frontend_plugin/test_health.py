"""``GET /health`` for load balancers: counts, never worker URLs; 503 when no worker is up."""

from __future__ import annotations

import asyncio

import httpx
from fastapi import FastAPI

from ridtrace.frontend_plugin import Frontend, FrontendSettings, WorkerPool, create_router

URLS = ("http://user:secretpw@127.0.0.1:8101", "http://127.0.0.1:8102")


def _health(frontend: Frontend, method: str = "GET") -> httpx.Response:
    app = FastAPI()
    app.include_router(create_router(frontend=frontend))

    async def run() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://fe") as client:
            return await client.request(method, "/health")

    return asyncio.run(run())


def test_health_counts_workers_in_rotation_and_names_none() -> None:
    now = [0.0]
    frontend = Frontend(FrontendSettings(workers=URLS))
    frontend.dispatcher.pool = WorkerPool(URLS, cooldown=10.0, clock=lambda: now[0])
    pool = frontend.dispatcher.pool

    ok = _health(frontend)
    assert (ok.status_code, ok.json()) == (200, {"status": "ok", "workers": {"total": 2, "up": 2}})
    pool.mark_down(URLS[0])
    assert _health(frontend).json() == {"status": "ok", "workers": {"total": 2, "up": 1}}
    pool.mark_down(URLS[1])
    down = _health(frontend)
    assert (down.status_code, down.json()) == (
        503, {"status": "unavailable", "workers": {"total": 2, "up": 0}})
    assert _health(frontend, "HEAD").status_code == 503
    now[0] = 10.0  # the cooldown is over: both are tried again, so both count as up
    assert _health(frontend).status_code == 200
    assert _health(frontend, "HEAD").status_code == 200
    for response in (ok, down):
        assert "127.0.0.1" not in response.text and "secretpw" not in response.text


def test_a_frontend_without_workers_is_unavailable() -> None:
    response = _health(Frontend(FrontendSettings()))
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "workers": {"total": 0, "up": 0}}
