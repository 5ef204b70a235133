"""A ready-to-run frontend app: the router plus the tracing middleware."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import orjson
from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ridtrace.frontend_plugin.allow_header import allow_in_order
from ridtrace.frontend_plugin.asgi_io import fastapi_app
from ridtrace.frontend_plugin.auth import (
    SharedSecretMiddleware,
    matching_route,
)
from ridtrace.frontend_plugin.drain import Drain
from ridtrace.frontend_plugin.frontend import Frontend
from ridtrace.frontend_plugin.openapi_paths import with_plain_routes
from ridtrace.frontend_plugin.routes import InferenceEndpoint, InferenceFastPath, create_router
from ridtrace.frontend_plugin.routes.anthropic import MESSAGES, sent_by_anthropic_sdk
from ridtrace.frontend_plugin.routes.base import INTERNAL_ERROR
from ridtrace.frontend_plugin.routes.count_tokens import CountTokensEndpoint
from ridtrace.frontend_plugin.routes.openai import CHAT
from ridtrace.frontend_plugin.settings import FrontendSettings
from ridtrace.tracing import (
    RequestTracingMiddleware,
    TracingSettings,
    current_context,
    telemetry_lifespan,
)
from ridtrace.tracing.deprecation import deprecated_headers_used
from ridtrace.tracing.exchange import MAX_SHOWN_METHOD
from ridtrace.tracing.identity import shown_text
from ridtrace.tracing.meters import METRICS_PATH, metrics_endpoint

__all__ = ["METRICS_PATH", "AnthropicRequestId", "create_frontend_app"]


async def _http_error(request: Request, exc: Exception) -> Response:
    """A path no route serves (404) or a method it does not take (405), in the API's
    error shape: FastAPI's ``{"detail": ...}`` left the OpenAI SDK's error without a
    message and is neither API's shape."""
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405 and "route" not in request.scope:
        # The path is a route's, the method not: label the request with that route
        # (``http.route``, the ``route`` of ``ridtrace.requests``), as FastAPI's own routes
        # and OpenTelemetry's FastAPI instrumentation do. The inference routes are plain
        # Starlette ones, which name themselves only when they serve: a wrong method
        # was counted "unmatched", as if the client had asked for an unknown URL.
        route = request.app.state.route_of(request.scope)
        if route is not None:
            request.scope["route"] = route
    # The path as received (percent-decoded), as the request's log line shows it: the
    # URL parser behind request.url drops tabs and line breaks, so a stray newline in a
    # client's base URL was told "Not Found" for a path that looked like a served one.
    path = request.scope["path"]
    method = shown_text(request.method, MAX_SHOWN_METHOD)  # any token, under h11
    message = f"{exc.detail}: {method} {shown_text(path, 256)}"
    if path.startswith(MESSAGES.path) or sent_by_anthropic_sdk(request.scope["headers"]):
        kind = "not_found_error" if exc.status_code == 404 else None
        payload = MESSAGES.error_payload(exc.status_code, message, kind)
    else:
        payload = CHAT.error_payload(exc.status_code, message)
    return Response(orjson.dumps(payload), exc.status_code, headers=allow_in_order(exc.headers),
                    media_type="application/json")


async def _internal_error(request: Request, exc: Exception) -> Response:
    """A crash in a route the router serves, in the API's error shape: Starlette's
    plain-text ``Internal Server Error`` was the one answer of the frontend that was not
    JSON, so the OpenAI SDK's error had no message and the Anthropic SDK's no type."""
    if (request.url.path.startswith(MESSAGES.path)
            or sent_by_anthropic_sdk(request.scope["headers"])):
        payload = MESSAGES.error_payload(500, INTERNAL_ERROR)
    else:
        payload = CHAT.error_payload(500, INTERNAL_ERROR)
    return Response(orjson.dumps(payload), 500, media_type="application/json")


def _host_refusal(scope: Scope, status: int, message: str, code: str) -> bytes:
    """A 421 or 400 of the Host check in the API's error shape, chosen as a 404's is: the
    Anthropic SDK showed OpenAI's body as a raw dict and read no ``error.type``."""
    if scope["path"].startswith(MESSAGES.path) or sent_by_anthropic_sdk(scope["headers"]):
        # Built per request: it names the request, as every Anthropic error body does.
        return orjson.dumps(MESSAGES.error_payload(status, message, "invalid_request_error"))
    return orjson.dumps(CHAT.error_payload(status, message, code=code))


class AnthropicRequestId:
    """Adds ``request-id`` (the server's ``request_id``) to answers under ``/v1/messages``
    and to every answer to the Anthropic SDK (``anthropic-version`` sent: its
    ``models.list`` and ``models.retrieve``, a 404 it gets elsewhere).

    Anthropic's API names every answer with a server id in ``request-id``, and its SDK
    reads exactly that header for ``Message._request_id`` and every ``APIStatusError``'s
    ``request_id``: without it both were ``None``, so a caller had no id to quote from
    an error. The value equals ``x-server-request-id``. Goes inside the tracing
    middleware (which mints the id) and outside the key check (a 401 gets it too).
    The OpenAI routes are left alone: there ``x-request-id`` is the client's echo.
    """

    def __init__(self, app: ASGIApp, *, prefix: str = MESSAGES.path) -> None:
        self.app = app
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        root = scope.get("root_path")
        if root and path.startswith(root):  # mounted under a prefix: the app's own path
            path = path[len(root):]
        if not path.startswith(self.prefix) and not sent_by_anthropic_sdk(scope["headers"]):
            await self.app(scope, receive, send)
            return
        ctx = current_context()
        if ctx is None:
            await self.app(scope, receive, send)
            return

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                # Read at the start of the answer: the legacy policy re-keys the request.
                header = (b"request-id", ctx.request_id.encode("latin-1"))
                message = {**message, "headers": [*message.get("headers", ()), header]}
            await send(message)

        await self.app(scope, receive, send_with_id)


class _FrontendApp(FastAPI):
    """FastAPI with the inference fast path right under the user middleware.

    FastAPI wraps user middleware in its own outer layers (server-error page, telemetry
    exception hook, body limit); here those move inside the fast path, so inference
    requests cross the tracing middleware (and the key check, and anything a user adds)
    and then nothing but their endpoint (issue 15). The tracing middleware answers 500
    itself for an exception before the response starts.
    """

    fast_routes: Sequence[BaseRoute] = ()
    """Routes whose :class:`InferenceEndpoint` endpoints the fast path serves."""

    def build_middleware_stack(self) -> ASGIApp:
        user, self.user_middleware = self.user_middleware, []
        try:
            app = super().build_middleware_stack()  # FastAPI's own layers and the router
        finally:
            self.user_middleware = user
        app = InferenceFastPath(app, routes=self.fast_routes)
        for cls, args, kwargs in reversed(user):
            app = cls(app, *args, **kwargs)
        return app


def create_frontend_app(
    settings: FrontendSettings | None = None,
    *,
    tracing: TracingSettings | None = None,
    frontend: Frontend | None = None,
    drain: Drain | None = None,
) -> FastAPI:
    """A FastAPI app serving the inference routes with request tracing.

    ``app.state.frontend`` is the :class:`Frontend` (registry, dispatcher); its worker
    connections are closed when the app shuts down, and the tracer and meter providers
    ridtrace configured are flushed and shut down after them. ``GET /metrics`` serves
    the Prometheus text. With ``settings.api_keys`` every route but ``/health`` (and
    ``/metrics`` unless ``metrics_require_key``) needs a key. ``drain.stop_all()`` ends
    the requests still in flight with a 503 or an in-band error event (``ridtrace
    serve`` calls it shortly before its graceful-shutdown timeout); it is ignored when
    ``frontend`` is given (that one has its own ``frontend.drain``).
    """
    tracing = tracing or TracingSettings()
    fe = frontend or Frontend(settings, drain=drain,
                              max_client_id_length=tracing.max_client_id_length)

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

    # FastAPI's /docs, /redoc and /openapi.json describe the service to anyone who can
    # reach the port (the Swagger page even loads scripts from a CDN): internals, served
    # only with the debug endpoints, as the worker never serves them.
    docs = fe.settings.debug_endpoints
    app = fastapi_app(app_class=_FrontendApp, title="ridtrace frontend", lifespan=lifespan,
                      exception_handlers={HTTPException: _http_error,
                                          Exception: _internal_error},
                      openapi_url="/openapi.json" if docs else None,
                      docs_url="/docs" if docs else None, redoc_url="/redoc" if docs else None)
    app.state.frontend = fe
    deprecated_headers_used(fe.settings.id_policy == "legacy")
    router = create_router(frontend=fe)
    app.include_router(router)
    assert isinstance(app, _FrontendApp)
    app.fast_routes = router.routes
    if docs:
        app.openapi = with_plain_routes(  # type: ignore[method-assign]
            app, router.routes,
            lambda route: isinstance(route.endpoint, (InferenceEndpoint, CountTokensEndpoint)),
            keyed=bool(fe.settings.api_keys))
    # An API route, not a plain one: the router labels the scrape with its template.
    app.add_api_route(
        METRICS_PATH, metrics_endpoint, methods=["GET", "HEAD"], include_in_schema=False
    )
    # The route a request's path names, whatever its method (the included router's
    # routes are its own, not app.router's): for key refusals and 405s.
    app.state.route_of = matching_route([*router.routes, *app.router.routes])
    config = fe.settings
    # Added before the tracing middleware, so it runs inside it: a refusal has its ids and
    # its request.end line like any other answer. Not added at all without keys: an
    # open frontend pays nothing for the check.
    if config.api_keys:
        app.add_middleware(
            SharedSecretMiddleware,
            secrets=config.api_keys,
            open_paths=("/health",) if config.metrics_require_key else ("/health", METRICS_PATH),
            hint=": send it as 'Authorization: Bearer <key>' or 'x-api-key: <key>'",
            route_of=app.state.route_of,
        )
    app.add_middleware(AnthropicRequestId)
    # For `ridtrace serve`'s Host check (host_checked): inside AnthropicRequestId, so a
    # 421 (or 400) has the `request-id` the Anthropic SDK reads, in the API's own error shape.
    app.state.answer_labels = (AnthropicRequestId,)
    app.state.host_refusal = _host_refusal
    app.add_middleware(
        RequestTracingMiddleware,
        settings=tracing,
    )
    return app
