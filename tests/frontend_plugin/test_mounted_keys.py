"""The key check of a frontend mounted under a prefix goes by the app's own paths.

Mounted at ``/api`` (Starlette's ``Mount``, or a server's ``--root-path``), a request's
``path`` carries the prefix and ``root_path`` names it. The check compared the whole path
with its open paths and its error prefixes: ``/api/health`` needed a key, so every load
balancer probe got 401 and took the frontend out of rotation, ``/api/metrics`` (open by
default) refused every scraper, and a refused ``/api/v1/messages`` answered in OpenAI's
error shape instead of Anthropic's.
"""

from __future__ import annotations

import asyncio

import httpx
from starlette.applications import Starlette
from starlette.routing import Mount

from ridtrace.frontend_plugin import FrontendSettings, create_frontend_app


async def _answers(paths: list[tuple[str, str]]) -> list[httpx.Response]:
    frontend = create_frontend_app(
        FrontendSettings(api_keys=("k1",), workers=("http://127.0.0.1:9",)))
    outer = Starlette(routes=[Mount("/api", app=frontend)])
    transport = httpx.ASGITransport(app=outer)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        return [await client.request(method, path) for method, path in paths]


def test_open_paths_stay_open_and_refusals_keep_their_shape_under_a_prefix() -> None:
    health, metrics, models, messages = asyncio.run(_answers([
        ("GET", "/api/health"), ("GET", "/api/metrics"), ("GET", "/api/v1/models"),
        ("POST", "/api/v1/messages"),
    ]))
    assert health.status_code != 401 and "workers" in health.json()
    assert metrics.status_code == 200
    assert models.status_code == 401  # everything else still needs the key
    assert messages.status_code == 401
    assert messages.json()["error"]["type"] == "authentication_error"  # Anthropic's shape
