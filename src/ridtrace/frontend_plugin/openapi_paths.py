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


def _operation(route: Route) -> dict[str, Any]:
    name = route.name or route.path
    return {"summary": name.replace("_", " "), "operationId": f"{name}_post",
            "requestBody": _BODY, "responses": _ANSWERS}


def with_plain_routes(app: FastAPI, routes: Iterable[BaseRoute],
                      served: Callable[[Route], bool]) -> Callable[[], dict[str, Any]]:
    """``app.openapi`` with the plain ``POST`` routes of ``routes`` that ``served`` names
    added beside FastAPI's own, built once."""
    plain = [r for r in routes if isinstance(r, Route) and served(r)]

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, routes=app.routes)
            paths = schema.setdefault("paths", {})
            for route in plain:
                paths.setdefault(route.path, {})["post"] = _operation(route)
            # Kept out of FastAPI's schema (a GET and HEAD route has one operation id
            # for both), but a route of the API like the others.
            paths.setdefault("/health", {})["get"] = _HEALTH
            app.openapi_schema = schema
        return app.openapi_schema

    return openapi
