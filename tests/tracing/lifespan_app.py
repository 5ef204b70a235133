"""A user's own FastAPI app with the documented one-liner: ``lifespan=telemetry_lifespan``.

Run under uvicorn by tests/tracing/test_lifespan_e2e.py; OTEL_* configure the export.
"""

from __future__ import annotations

from fastapi import FastAPI

from ridtrace import (
    RequestTracingMiddleware,
    configure_metrics,
    configure_tracing,
    telemetry_lifespan,
)


def create_app() -> FastAPI:
    configure_tracing("users-app")
    configure_metrics("users-app")
    app = FastAPI(lifespan=telemetry_lifespan)
    app.add_middleware(RequestTracingMiddleware)

    @app.get("/items/{item}")
    async def item(item: str) -> dict[str, str]:
        return {"item": item}

    return app
