"""A FastAPI app with ridtrace's middleware and ``configure_logging`` only: no tracer
or meter provider of ridtrace's, no ``telemetry_lifespan``.

Configured by environment: RIDTRACE_TEST_LOG (log file). Run under uvicorn by
tests/tracing/test_shutdown_cancelled_e2e.py.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator

from fastapi import FastAPI
from fastapi.responses import StreamingResponse
from loguru import logger

from ridtrace import RequestTracingMiddleware, configure_logging


def create_app() -> FastAPI:
    logger.remove()
    configure_logging(os.environ["RIDTRACE_TEST_LOG"], service="logging-only")
    app = FastAPI()
    app.add_middleware(RequestTracingMiddleware)

    @app.get("/")
    async def root() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/endless")
    async def endless() -> StreamingResponse:
        async def ticks() -> AsyncIterator[bytes]:
            while True:
                yield b"tick\n"
                await asyncio.sleep(0.05)

        return StreamingResponse(ticks(), media_type="text/plain")

    return app
