"""A ready-to-run frontend app: the router plus the tracing middleware."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from ridtrace.frontend_plugin.asgi_io import fastapi_app
from ridtrace.frontend_plugin.auth import SharedSecretMiddleware, anthropic_error
from ridtrace.frontend_plugin.frontend import Frontend
from ridtrace.frontend_plugin.routes import InferenceFastPath, create_router
from ridtrace.frontend_plugin.routes.anthropic import MESSAGES
from ridtrace.frontend_plugin.settings import FrontendSettings
from ridtrace.tracing import RequestTracingMiddleware, TracingSettings, telemetry_lifespan
from ridtrace.tracing.meters import METRICS_PATH, metrics_endpoint

__all__ = ["METRICS_PATH", "create_frontend_app"]



def create_frontend_app(
    settings: FrontendSettings | None = None,
    *,
    tracing: TracingSettings | None = None,
    frontend: Frontend | None = None,
) -> FastAPI:
    """A FastAPI app serving the inference routes with request tracing.

    ``app.state.frontend`` is the :class:`Frontend` (registry, dispatcher); its worker
    connections are closed when the app shuts down, and the tracer and meter providers
    ridtrace configured are flushed and shut down after them. ``GET /metrics`` serves
    the Prometheus text. With ``settings.api_keys`` every route but ``/health`` (and
    ``/metrics`` unless ``metrics_require_key``) needs a key.
    """
    fe = frontend or Frontend(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with telemetry_lifespan(app):
            # Everything built so far (FastAPI, pydantic, OpenTelemetry, the app) lives
            # as long as the process: out of the collector's sight, a full collection
            # no longer walks it. Those walks were an eighth of the frontend's CPU under
            # load (issue 15).
            gc.freeze()
            try:
                yield
            finally:
                await fe.aclose()

    app = fastapi_app(title="ridtrace frontend", lifespan=lifespan)
    app.state.frontend = fe
    router = create_router(frontend=fe)
    app.include_router(router)
    app.add_route(METRICS_PATH, metrics_endpoint, methods=["GET"], include_in_schema=False)
    config = fe.settings
    # Innermost: inference requests leave FastAPI's stack here, after the tracing
    # middleware and the key check have run.
    app.add_middleware(InferenceFastPath, routes=router.routes)
    # Added before the tracing middleware, so it runs inside it: a refusal has its ids and
    # its request.end line like any other answer. Not added at all without keys: an
    # open frontend pays nothing for the check.
    if config.api_keys:
        app.add_middleware(
            SharedSecretMiddleware,
            secrets=config.api_keys,
            open_paths=("/health",) if config.metrics_require_key else ("/health", METRICS_PATH),
            error_bodies={MESSAGES.path: anthropic_error},
            hint=": send it as 'Authorization: Bearer <key>' or 'x-api-key: <key>'",
        )
    app.add_middleware(
        RequestTracingMiddleware,  # type: ignore[arg-type]  # Starlette's factory typing
        settings=tracing or TracingSettings(),
    )
    return app
