"""A user's own FastAPI app with the documented one-liner: ``lifespan=telemetry_lifespan``.

Run under uvicorn by tests/tracing/test_lifespan_e2e.py; OTEL_* configure the export.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator

from fastapi import FastAPI
from fastapi.responses import StreamingResponse

from ridtrace import (
    RequestTracingMiddleware,
    configure_metrics,
    configure_tracing,
    telemetry_lifespan,
)


def create_app() -> FastAPI:
    configure_tracing("users-app")
    configure_metrics("users-app")
    # FastAPI's own server span (its telemetry switches on with the tracer provider)
    # unless the test asks for ridtrace's alone.
    off = {"tracing": False, "metrics": False, "logs": False}
    telemetry = off if os.environ.get("LIFESPAN_APP_FASTAPI_TELEMETRY") == "off" else {}
    app = FastAPI(lifespan=telemetry_lifespan, **({"telemetry": telemetry} if telemetry else {}))
    app.add_middleware(RequestTracingMiddleware)

    @app.get("/stream")
    async def stream() -> StreamingResponse:
        async def tokens() -> AsyncIterator[str]:
            for i in range(600):  # a minute: still streaming when the server stops
                yield f"token {i}\n"
                await asyncio.sleep(0.1)

        return StreamingResponse(tokens())

    waiting: list[None] = []

    @app.get("/slow")
    async def slow(cleanup: float = 0.0) -> dict[str, str]:
        waiting.append(None)
        try:
            await asyncio.sleep(60)  # no answer yet when the server stops
        finally:
            # What a cancelled handler may still await (closing an upstream connection).
            await asyncio.sleep(cleanup)
        return {"slow": "done"}

    @app.get("/slow/waiting")
    async def slow_waiting() -> dict[str, int]:
        return {"waiting": len(waiting)}

    @app.get("/items/{item}")
    async def item(item: str) -> dict[str, str]:
        return {"item": item}

    return app
