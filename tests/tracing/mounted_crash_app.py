"""A FastAPI app whose own 500 handler must answer crashes inside the apps mounted on
it: served under a real uvicorn by `test_mounted_crash_e2e`.

Configured by environment: RIDTRACE_TEST_LOG (log file).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from loguru import logger
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from ridtrace import RequestTracingMiddleware, configure_logging, configure_tracing


def create_app() -> FastAPI:
    logger.remove()
    configure_logging(os.environ["RIDTRACE_TEST_LOG"], service="mounted-crash")
    configure_tracing("mounted-crash")

    app = FastAPI()
    api = FastAPI()

    @app.exception_handler(Exception)
    async def on_error(request: Request, exc: Exception) -> JSONResponse:
        logger.error("outer handler for {}", exc)
        return JSONResponse({"error": "internal"}, status_code=500)

    @app.get("/")
    async def root() -> dict[str, str]:
        return {"ok": "yes"}

    @api.get("/boom")
    async def boom() -> None:
        raise RuntimeError("crash in the mounted api")

    async def chunks() -> AsyncIterator[bytes]:
        yield b"first chunk\n"
        raise RuntimeError("crash in the mounted stream")

    async def stream(request: Request) -> StreamingResponse:
        return StreamingResponse(chunks())

    app.mount("/api", api)
    app.mount("/files", Starlette(routes=[Route("/stream", stream)]))
    app.add_middleware(RequestTracingMiddleware)
    return app
