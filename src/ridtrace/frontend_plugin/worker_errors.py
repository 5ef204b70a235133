"""A worker's 404 and 405, in the error shape of its other answers.

FastAPI answered them ``{"detail": "Not Found"}`` (and ``/v1/work`` its 405 so too),
while every other refusal of a worker (a malformed envelope, a missing token, a Host it
does not answer for) is ``{"error": {"message": ..., "type": ...}}``, the frontend's
OpenAI shape: a client of the worker, or an operator's probe, read a 404 without the
``error`` object it reads everywhere else.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from ridtrace.frontend_plugin import json_codec
from ridtrace.frontend_plugin.allow_header import allow_in_order
from ridtrace.tracing.exchange import MAX_SHOWN_METHOD
from ridtrace.tracing.identity import shown_text

__all__ = ["not_served", "worker_http_error"]


def not_served(detail: str, scope: Scope) -> dict[str, object]:
    """The body of a 404 or 405: what it is (``detail``), and the method and path asked
    for (the path as received, capped, control characters escaped, as the frontend's)."""
    method = shown_text(scope["method"], MAX_SHOWN_METHOD)
    message = f"{detail}: {method} {shown_text(scope['path'], 256)}"
    return {"error": {"message": message, "type": "invalid_request_error", "param": None,
                      "code": None}}


async def worker_http_error(request: Request, exc: Exception) -> Response:
    """The worker's handler of the router's 404 and 405."""
    assert isinstance(exc, HTTPException)
    # A 405's Allow in one order, as the frontend's: Starlette joins the route's methods
    # from a set, so it said 'GET, HEAD' or 'HEAD, GET' as PYTHONHASHSEED fell.
    return Response(json_codec.dumps(not_served(exc.detail, request.scope)),
                    exc.status_code, headers=allow_in_order(exc.headers),
                    media_type="application/json")
