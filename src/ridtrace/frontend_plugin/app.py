"""A ready-to-run frontend app: the router plus the tracing middleware."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from ridtrace.frontend_plugin.asgi_io import fastapi_app
from ridtrace.frontend_plugin.frontend import Frontend
from ridtrace.frontend_plugin.routes import create_router
from ridtrace.frontend_plugin.settings import FrontendSettings
from ridtrace.tracing import RequestTracingMiddleware, TracingSettings

__all__ = ["create_frontend_app"]


def create_frontend_app(
    settings: FrontendSettings | None = None,
    *,
    tracing: TracingSettings | None = None,
    frontend: Frontend | None = None,
) -> FastAPI:
    """A FastAPI app serving the inference routes with request tracing.

    ``app.state.frontend`` is the :class:`Frontend` (registry, dispatcher); its worker
    connections are closed when the app shuts down.
    """
    fe = frontend or Frontend(settings)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        await fe.aclose()

    app = fastapi_app(title="ridtrace frontend", lifespan=lifespan)
    app.state.frontend = fe
    app.include_router(create_router(frontend=fe))
    app.add_middleware(
        RequestTracingMiddleware,  # type: ignore[arg-type]  # Starlette's factory typing
        settings=tracing or TracingSettings(),
    )
    return app
