"""A user's FastAPI app with an ``@app.middleware("http")`` function of its own inside
ridtrace's middleware: Starlette runs such a function as a ``BaseHTTPMiddleware``,
which re-sends the route's response through a stream of its own.

Run under uvicorn by tests/tracing/test_decorated_app_e2e.py; RIDTRACE_TEST_LOG names the log.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable

from fastapi import FastAPI, Request, Response
from fastapi.responses import StreamingResponse
from loguru import logger

from ridtrace import RequestTracingMiddleware, configure_logging


def create_app() -> FastAPI:
    logger.remove()
    configure_logging(os.environ["RIDTRACE_TEST_LOG"], service="decorated-app")
    app = FastAPI(telemetry={"tracing": False})  # type: ignore[call-arg]

    @app.middleware("http")
    async def timing_header(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        response.headers["x-handled-by"] = "decorated-app"
        return response

    app.add_middleware(RequestTracingMiddleware)

    @app.get("/")
    async def root() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/tokens")
    async def tokens(count: int = 1000) -> StreamingResponse:
        async def generate() -> AsyncIterator[str]:
            for i in range(count):
                yield f"token {i}\n"
                await asyncio.sleep(0.01)

        return StreamingResponse(generate())

    @app.get("/breaks")
    async def breaks() -> StreamingResponse:
        async def generate() -> AsyncIterator[str]:
            yield "token 0\n"
            await asyncio.sleep(0.01)
            raise RuntimeError("the model crashed mid-stream")

        return StreamingResponse(generate())

    return app
