"""Requests no span is wanted for (health probes, metrics scrapes), as OpenTelemetry's
own instrumentations are told: ``OTEL_PYTHON_FASTAPI_EXCLUDED_URLS``, else
``OTEL_PYTHON_EXCLUDED_URLS``, comma-separated regular expressions searched in the
request's URL. Such a request still gets its ids, lines and metrics; only its span is
left out, as FastAPI's instrumentation leaves out its own.
"""

from __future__ import annotations

import os

from opentelemetry.util.http import ExcludeList, get_excluded_urls
from starlette.types import Scope

_OWN, _GENERAL = "OTEL_PYTHON_FASTAPI_EXCLUDED_URLS", "OTEL_PYTHON_EXCLUDED_URLS"


def excluded_urls() -> ExcludeList | None:
    """The URLs the variables exclude, None when neither is set (nothing is matched)."""
    if not os.environ.get(_OWN, os.environ.get(_GENERAL, "")).strip():
        return None
    return get_excluded_urls("FASTAPI")


def request_url(scope: Scope) -> str:
    """The URL the patterns are searched in: scheme, the socket's address, the path (no
    query, no credentials), as the ASGI instrumentation builds it."""
    server = scope.get("server")
    host = f"{server[0]}:{server[1]}" if server and server[1] is not None else (
        server[0] if server else "")
    return f"{scope.get('scheme', 'http')}://{host}{scope.get('path', '')}"
