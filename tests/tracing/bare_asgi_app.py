"""A bare ASGI app wrapped in ``RequestTracingMiddleware``, as docs/tracing.md says any
ASGI app may be, with ridtrace's providers and no lifespan of its own: it refuses the
lifespan scope as uvicorn's own quickstart app does (``assert``), or ignores it. Or a
Starlette app whose lifespan of its own does not nest ``telemetry_lifespan``.

Run under uvicorn by tests/tracing/test_bare_app_shutdown_e2e.py; OTEL_* configure the
export, ``BARE_APP_LIFESPAN`` (``raise``, ``return`` or ``own``) which app it is.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ridtrace import RequestTracingMiddleware, configure_metrics, configure_tracing


def create_app() -> ASGIApp:
    configure_tracing("bare-app")
    configure_metrics("bare-app", prometheus=False)
    kind = os.environ.get("BARE_APP_LIFESPAN", "raise")
    if kind == "own":
        return RequestTracingMiddleware(_starlette_app())
    refuses = kind == "raise"

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if refuses:
            assert scope["type"] == "http"
        elif scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"hello"})

    return RequestTracingMiddleware(app)


def _starlette_app() -> Starlette:
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield  # the application's own start-up and shutdown, telemetry not among them

    async def hello(request: Request) -> PlainTextResponse:
        return PlainTextResponse("hello")

    return Starlette(routes=[Route("/hello", hello), Route("/", hello)], lifespan=lifespan)
