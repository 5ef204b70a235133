"""The inference routes as one mountable FastAPI router, and their fast path."""

from __future__ import annotations

from collections.abc import Iterable

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ridtrace.frontend_plugin.bodies import MAX_MODEL_LENGTH
from ridtrace.frontend_plugin.frontend import Frontend
from ridtrace.frontend_plugin.routes.anthropic import MESSAGES, sent_by_anthropic_sdk
from ridtrace.frontend_plugin.routes.base import ApiSpec
from ridtrace.frontend_plugin.routes.core import serve
from ridtrace.frontend_plugin.routes.count_tokens import COUNTERS, CountTokensEndpoint
from ridtrace.frontend_plugin.routes.generate import GENERATE, SGLANG_GENERATE
from ridtrace.frontend_plugin.routes.openai import CHAT, COMPLETIONS
from ridtrace.frontend_plugin.routes.responses import RESPONSES
from ridtrace.frontend_plugin.settings import FrontendSettings
from ridtrace.tracing.identity import shown_text

__all__ = ["APIS", "InferenceEndpoint", "InferenceFastPath", "create_router"]

MAX_MODELS_PAGE = 1000
"""Anthropic's largest ``limit`` for a page of models."""

APIS: tuple[ApiSpec, ...] = (CHAT, COMPLETIONS, RESPONSES, MESSAGES, GENERATE, SGLANG_GENERATE)
"""The six inference APIs, in route order."""


class InferenceEndpoint:
    """One inference API as a plain ASGI app: what its route and the fast path call.

    It names its route in ``scope["route"]`` itself: the tracing middleware reads the
    route template (``http.route``, the ``route`` log field) from there, and neither
    Starlette nor the fast path sets it for a plain route.
    """

    __slots__ = ("api", "frontend", "route")

    def __init__(self, frontend: Frontend, api: ApiSpec) -> None:
        self.frontend = frontend
        self.api = api
        self.route = Route(api.path, self, methods=["POST"], name=api.endpoint)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["route"] = self.route
        await serve(scope, receive, send, self.frontend, self.api)


class InferenceFastPath:
    """Sends ``POST`` requests for the inference paths straight to their endpoints.

    Added inside the tracing middleware (which still opens the one server span and
    mints the ids), it skips what lies between: Starlette's exception middleware,
    FastAPI's exit stack, the router's matching and its request/response wrappers,
    about a sixth of the frontend's CPU per request (issue 15). Everything else,
    ``/docs``, ``/openapi.json``, ``/health``, a ``GET`` on an inference path (405),
    goes on to the app as before.

    Args:
        app: the rest of the app.
        routes: routes to look through; every one whose endpoint is an
            :class:`InferenceEndpoint` is served directly.
    """

    def __init__(self, app: ASGIApp, *, routes: Iterable[BaseRoute]) -> None:
        self.app = app
        self._endpoints = {
            route.path: route.endpoint for route in routes
            if isinstance(route, Route) and isinstance(route.endpoint, InferenceEndpoint)
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            path = scope["path"]
            root = scope.get("root_path")
            # The path Starlette's router matches on (starlette._utils.get_route_path).
            if root and path.startswith(root) and path[len(root):len(root) + 1] == "/":
                path = path[len(root):]
            endpoint = self._endpoints.get(path)
            if endpoint is not None:
                await endpoint(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_router(
    settings: FrontendSettings | None = None, *, frontend: Frontend | None = None
) -> APIRouter:
    """A router with the six inference routes, ``/v1/messages/count_tokens`` and
    ``/v1/responses/input_tokens``,
    ``/v1/models`` (and
    ``/v1/models/{model}``), ``/health`` and
    ``GET /debug/inflight`` (when ``settings.debug_endpoints``).

    Pass ``frontend`` to share or inspect its registry and dispatcher (and to close its
    connection pool on shutdown with ``await frontend.aclose()``); otherwise one is
    built from ``settings``. Add :class:`ridtrace.RequestTracingMiddleware` to the app:
    the routes key the registry by the request id it mints.
    """
    fe = frontend or Frontend(settings)
    router = APIRouter()
    for api in APIS:
        router.routes.append(InferenceEndpoint(fe, api).route)
    router.routes.extend(
        CountTokensEndpoint(fe.settings, c, fe.drain).route for c in COUNTERS)

    def listed() -> dict[str, object]:
        # OpenAI's fields and Anthropic's (type, display_name, created_at, lifecycle):
        # both SDKs read /v1/models, each ignores the other's fields, and the Anthropic
        # SDK's ModelInfo had None where it types a string, a datetime and a literal.
        name = fe.settings.model
        return {"id": name, "object": "model", "created": 0, "owned_by": "ridtrace",
                "type": "model", "display_name": name, "created_at": "1970-01-01T00:00:00Z",
                "lifecycle": "active"}

    @router.get("/v1/models")
    async def models(request: Request) -> JSONResponse:
        name = fe.settings.model
        query = request.query_params
        limit = query.get("limit")
        # Leading zeros dropped and the length bounded before int(): past 4300 digits
        # int() raises, and the request was a plain-text 500 with a traceback logged.
        digits = limit.lstrip("0") if limit is not None else ""
        if limit is not None and not (limit.isascii() and limit.isdigit()
                                      and len(digits) <= len(str(MAX_MODELS_PAGE))
                                      and 1 <= int(digits or "0") <= MAX_MODELS_PAGE):
            message = f"'limit' must be an integer from 1 to {MAX_MODELS_PAGE}"
            api = MESSAGES if sent_by_anthropic_sdk(request.scope["headers"]) else CHAT
            return JSONResponse(api.error_payload(400, message, param="limit"),
                                status_code=400)
        # Anthropic's page fields beside OpenAI's: one page, nothing after it. A page
        # after or before a cursor (Anthropic's after_id / before_id) is empty: with the
        # model listed again, a client paging until it sees no data never stopped.
        if query.get("after_id") or query.get("before_id"):
            return JSONResponse({"object": "list", "data": [], "has_more": False,
                                 "first_id": None, "last_id": None})
        return JSONResponse({"object": "list", "data": [listed()], "has_more": False,
                             "first_id": name, "last_id": name})

    # What the SDKs' models.retrieve asks for. ``path``: model ids hold slashes
    # ("org/name"), sent as they are or as %2F (both decode to the same path).
    @router.get("/v1/models/{model_id:path}")
    async def model(model_id: str, request: Request) -> JSONResponse:
        if model_id == fe.settings.model:
            return JSONResponse(listed())
        # The API's answer for a model it does not serve; the SDKs raise NotFoundError.
        message = f"The model '{shown_text(model_id, MAX_MODEL_LENGTH)}' does not exist"
        if sent_by_anthropic_sdk(request.scope["headers"]):
            return JSONResponse(MESSAGES.error_payload(404, message), status_code=404)
        return JSONResponse({"error": {"message": message, "type": "invalid_request_error",
                                       "param": "model", "code": "model_not_found"}},
                            status_code=404)

    # For load balancers and probes, so open even with API keys: it shows counts only,
    # never a worker URL (that is /debug/inflight's, off by default). HEAD is what
    # some balancers send.
    # Out of the schema: a probe for load balancers, and one id per method would clash.
    @router.api_route("/health", methods=["GET", "HEAD"], include_in_schema=False)
    async def health() -> JSONResponse:
        pool = fe.dispatcher.pool
        up = pool.up_count()
        workers = {"total": len(pool.urls), "up": up}
        if up == 0:
            return JSONResponse({"status": "unavailable", "workers": workers}, status_code=503)
        return JSONResponse({"status": "ok", "workers": workers})

    # HEAD wherever GET is served (RFC 9110 section 9.1: every general-purpose server
    # supports both); `curl -I` got 405. One route takes both, so a 405 names both in
    # Allow (a HEAD route beside the GET one answered "Allow: GET"); it goes ahead of the
    # GET route, which is left for the schema alone: the same endpoint under two methods
    # there would repeat its operation id.
    for path, endpoint in (("/v1/models", models), ("/v1/models/{model_id:path}", model)):
        router.add_api_route(path, endpoint, methods=["GET", "HEAD"], include_in_schema=False)
        schema_route = next(i for i, r in enumerate(router.routes)
                            if getattr(r, "path", None) == path)
        router.routes.insert(schema_route, router.routes.pop())

    if fe.settings.debug_endpoints:

        @router.get("/debug/inflight")
        async def inflight() -> dict[str, object]:
            return fe.snapshot()

    return router
