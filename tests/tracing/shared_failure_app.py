"""Requests that await one shared future (request coalescing) which fails: every waiter
raises the same exception object. The app's 500 handler is a plain ``def``, which
Starlette runs in a thread: an await between the failure and the server's crash line.
A watchdog task started with the app, outside every request, logs the same exception
through the standard library when ``/watchdog`` asks it to.

Configured by environment: RIDTRACE_TEST_LOG (log file).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from loguru import logger

from ridtrace import RequestTracingMiddleware, configure_logging


def create_app() -> FastAPI:
    logger.remove()
    configure_logging(os.environ["RIDTRACE_TEST_LOG"], service="shared-failure")
    shared: dict[str, asyncio.Future[None]] = {}
    waiting: set[str] = set()
    asked = asyncio.Event()

    async def watchdog() -> None:
        await asked.wait()
        logging.getLogger("watchdog").error("backend still down",
                                            exc_info=shared["fill"].exception())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        task = asyncio.create_task(watchdog())  # the app's, not a request's
        yield
        task.cancel()

    app = FastAPI(lifespan=lifespan)
    app.add_middleware(RequestTracingMiddleware)

    @app.get("/watchdog")
    async def wake_watchdog() -> None:
        asked.set()

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
