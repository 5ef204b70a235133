"""The frontend's API docs (``/openapi.json``, ``/docs``, ``/redoc``) with its inference routes.

The inference and token-count routes are plain Starlette routes served by the fast path
(`routes.InferenceFastPath`), which FastAPI's schema leaves out: the docs listed
``/v1/models`` and ``/debug/inflight`` alone. Their bodies are the APIs' own (OpenAI's,
Anthropic's, the generate routes'), documented by those APIs; the schema names each route,
its body and its answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from starlette.routing import BaseRoute, Route

__all__ = ["with_plain_routes"]

_BODY = {"required": True, "content": {"application/json": {"schema": {"type": "object"}}}}
_ERROR = {"application/json": {"schema": {"type": "object", "properties": {
    "error": {"type": "object"}}}}}
_ANSWERS = {
    "200": {"description": "The API's answer: a JSON document, or with `\"stream\": true` "
                           "a `text/event-stream` of its events",
            "content": {"application/json": {"schema": {"type": "object"}},
                        "text/event-stream": {"schema": {"type": "string"}}}},
    "400": {"description": "A body the API refuses, the field named", "content": _ERROR},
    "413": {"description": "A body over the size limit", "content": _ERROR},
    "415": {"description": "A body that is not JSON", "content": _ERROR},
    "502": {"description": "No worker could serve the request", "content": _ERROR},
    "503": {"description": "No worker, or every worker had the id in flight",
            "content": _ERROR},
    "504": {"description": "A worker or the request timed out", "content": _ERROR},
}


_HEALTH = {
    "summary": "health", "operationId": "health_get",
    "responses": {
        "200": {"description": "Serving: the workers known and up",
                "content": {"application/json": {"schema": {"type": "object"}}}},
        "503": {"description": "No worker up, or the server is stopping",
                "content": {"application/json": {"schema": {"type": "object"}}}},
    },
}


# GET /v1/models/{model_id}: FastAPI lists a 422 for its path parameter, never sent
# (any text is a model id), and not the 404 of a model not served.
_MODEL_ANSWERS = {
    "200": {"description": "The model served",
            "content": {"application/json": {"schema": {"type": "object"}}}},
    "404": {"description": "A model not served (`model_not_found`)", "content": _ERROR},
}
# Where the server has API keys: either header, on every route but /health.
_KEY_SCHEMES = {
    "bearerKey": {"type": "http", "scheme": "bearer"},
    "apiKeyHeader": {"type": "apiKey", "in": "header", "name": "x-api-key"},
}
_UNAUTHORIZED = {"description": "No API key, or not one of the server's", "content": _ERROR}


def _operation(route: Route) -> dict[str, Any]:
    name = route.name or route.path
    return {"summary": name.replace("_", " "), "operationId": f"{name}_post",
            "requestBody": _BODY, "responses": _ANSWERS}


def with_plain_routes(app: FastAPI, routes: Iterable[BaseRoute],
                      served: Callable[[Route], bool], *,
                      keyed: bool = False) -> Callable[[], dict[str, Any]]:
    """``app.openapi`` with the plain ``POST`` routes of ``routes`` that ``served`` names
    added beside FastAPI's own, built once; `keyed`: every route but ``/health`` needs
    an API key."""
    plain = [r for r in routes if isinstance(r, Route) and served(r)]

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, routes=app.routes)
            paths = schema.setdefault("paths", {})
            for route in plain:
                paths.setdefault(route.path, {})["post"] = _operation(route)
            # Kept out of FastAPI's schema (a GET and HEAD route has one operation id
            # for both), but a route of the API like the others.
            paths.setdefault("/health", {})["get"] = dict(_HEALTH)
            model = paths.get("/v1/models/{model_id}", {}).get("get")
            if model is not None:
                model["responses"] = _MODEL_ANSWERS
            if keyed:
                _with_keys(schema)
            app.openapi_schema = schema
        return app.openapi_schema

    return openapi


def _with_keys(schema: dict[str, Any]) -> None:
    """`schema` with the API keys' schemes required, and their 401, on every operation
    but ``/health``'s."""
    schema.setdefault("components", {}).setdefault("securitySchemes", {}).update(_KEY_SCHEMES)
    schema["security"] = [{name: []} for name in _KEY_SCHEMES]
    for path, operations in schema["paths"].items():
        for operation in operations.values():
            if path == "/health":
                operation["security"] = []  # open: for load balancers and probes
            else:
                operation["responses"] = {**operation["responses"], "401": _UNAUTHORIZED}
