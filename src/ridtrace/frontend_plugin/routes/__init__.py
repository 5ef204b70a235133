"""The inference routes as one mountable FastAPI router."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from ridtrace.frontend_plugin.asgi_io import plain_route
from ridtrace.frontend_plugin.frontend import Frontend
from ridtrace.frontend_plugin.routes.anthropic import MESSAGES
from ridtrace.frontend_plugin.routes.base import ApiSpec
from ridtrace.frontend_plugin.routes.core import serve
from ridtrace.frontend_plugin.routes.generate import GENERATE, SGLANG_GENERATE
from ridtrace.frontend_plugin.routes.openai import CHAT, COMPLETIONS, RESPONSES
from ridtrace.frontend_plugin.settings import FrontendSettings

__all__ = ["APIS", "create_router"]

APIS: tuple[ApiSpec, ...] = (CHAT, COMPLETIONS, RESPONSES, MESSAGES, GENERATE, SGLANG_GENERATE)
"""The six inference APIs, in route order."""


def _endpoint(fe: Frontend, api: ApiSpec) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        return await serve(request, fe, api)

    endpoint.__name__ = api.endpoint
    endpoint.__doc__ = f"{api.endpoint}: dispatched to a worker; see docs/frontend-plugin.md."
    return endpoint


def create_router(
    settings: FrontendSettings | None = None, *, frontend: Frontend | None = None
) -> APIRouter:
    """A router with the six inference routes, ``/v1/models``, ``/health`` and
    ``GET /debug/inflight`` (when ``settings.debug_endpoints``).

    Pass ``frontend`` to share or inspect its registry and dispatcher (and to close its
    connection pool on shutdown with ``await frontend.aclose()``); otherwise one is
    built from ``settings``. Add :class:`ridtrace.RequestTracingMiddleware` to the app:
    the routes key the registry by the request id it mints.
    """
    fe = frontend or Frontend(settings)
    router = APIRouter()
    for api in APIS:
        router.routes.append(plain_route(api.path, _endpoint(fe, api)))

    @router.get("/v1/models")
    async def models() -> dict[str, object]:
        return {"object": "list", "data": [
            {"id": fe.settings.model, "object": "model", "created": 0, "owned_by": "ridtrace"}
        ]}

    @router.get("/health")
    async def health() -> dict[str, object]:
        return {"status": "ok", "inflight": len(fe.registry), **fe.dispatcher.snapshot()}

    if fe.settings.debug_endpoints:

        @router.get("/debug/inflight")
        async def inflight() -> dict[str, object]:
            return fe.snapshot()

    return router
