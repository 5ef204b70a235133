"""An app whose handlers answer only when told to, served under a real uvicorn by
`test_gone_client_e2e`: their clients can leave before any answer.

Configured by environment: RIDTRACE_TEST_LOG (log file), OTEL_EXPORTER_OTLP_ENDPOINT.
"""

from __future__ import annotations

import asyncio
import os

from loguru import logger
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from ridtrace import RequestTracingMiddleware, configure_logging, configure_tracing

_released: dict[str, asyncio.Event] = {}


def _gate(name: str) -> asyncio.Event:
    return _released.setdefault(name, asyncio.Event())


async def held(request: Request) -> PlainTextResponse:
    """A GET that never reads its request, answering once /release?name= is asked."""
    await _gate(request.query_params["name"]).wait()
    return PlainTextResponse("late")


async def held_after_body(request: Request) -> PlainTextResponse:
    """A POST that reads its whole body first, then waits as `held` does."""
    body = await request.body()
    await _gate(request.query_params["name"]).wait()
    return PlainTextResponse(f"got {len(body)}")


async def release(request: Request) -> PlainTextResponse:
    _gate(request.query_params["name"]).set()
    return PlainTextResponse("released")


async def home(request: Request) -> PlainTextResponse:
    return PlainTextResponse("ok")


def create_app() -> Starlette:
    logger.remove()
    configure_logging(os.environ["RIDTRACE_TEST_LOG"], service="gone-client")
    configure_tracing("gone-client")
    return Starlette(routes=[
        Route("/", home), Route("/held", held), Route("/held", held_after_body, methods=["POST"]),
        Route("/release", release),
    ], middleware=[Middleware(RequestTracingMiddleware)])
