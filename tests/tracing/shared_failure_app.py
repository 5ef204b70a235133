"""Requests that await one shared future (request coalescing) which fails: every waiter
raises the same exception object. The app's 500 handler is a plain ``def``, which
Starlette runs in a thread: an await between the failure and the server's crash line.

Configured by environment: RIDTRACE_TEST_LOG (log file).
"""

from __future__ import annotations

import asyncio
import os

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from loguru import logger

from ridtrace import RequestTracingMiddleware, configure_logging


def create_app() -> FastAPI:
    logger.remove()
    configure_logging(os.environ["RIDTRACE_TEST_LOG"], service="shared-failure")
    app = FastAPI()
    app.add_middleware(RequestTracingMiddleware)
    shared: dict[str, asyncio.Future[None]] = {}
    waiting: set[str] = set()

    @app.get("/")
    async def root() -> dict[str, str]:
        return {"ok": "yes"}

    @app.get("/shared/{waiters}")
    async def fill(waiters: int, request: Request) -> None:
        # Fails once every waiter is waiting: a condition, not a nap.
        future = shared.setdefault("fill", asyncio.get_running_loop().create_future())
        waiting.add(request.headers["x-request-id"])
        if len(waiting) == waiters and not future.done():
            future.set_exception(RuntimeError("backend down"))
        await asyncio.shield(future)

    @app.exception_handler(Exception)
    def on_error(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"error": "internal"}, status_code=500)

    return app
