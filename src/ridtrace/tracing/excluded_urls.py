"""Requests no span is wanted for (health probes, metrics scrapes), as OpenTelemetry's
own instrumentations are told: ``OTEL_PYTHON_FASTAPI_EXCLUDED_URLS``, else
``OTEL_PYTHON_EXCLUDED_URLS``, comma-separated regular expressions searched in the
request's URL. Such a request still gets its ids, lines and metrics; only its span is
left out, as FastAPI's instrumentation leaves out its own.
"""

from __future__ import annotations

import os
import re

from opentelemetry.util.http import ExcludeList
from starlette.types import Scope

_OWN, _GENERAL = "OTEL_PYTHON_FASTAPI_EXCLUDED_URLS", "OTEL_PYTHON_EXCLUDED_URLS"


def excluded_urls() -> ExcludeList | None:
    """The URLs the variables exclude (the FastAPI one when set, as the instrumentation
    reads them), None when they name none; a pattern that is no regular expression
    raises ``ValueError`` naming the variable.

    Empty entries are no patterns. OpenTelemetry joins the list into one alternation,
    so a trailing comma (``/health$,``) made it match every URL: no request got a span.
    And a broken pattern raised ``re.error`` where the middleware was built: the
    frontend of ``ridtrace serve`` answered every request 500.
    """
    variable = _OWN if _OWN in os.environ else _GENERAL
    patterns = [entry.strip() for entry in os.environ.get(variable, "").split(",")]
    patterns = [pattern for pattern in patterns if pattern]
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{variable}: {pattern!r} is no regular expression ({exc})") from None
    return ExcludeList(patterns) if patterns else None


def request_url(scope: Scope) -> str:
    """The URL the patterns are searched in: scheme, the socket's address, the path (no
    query, no credentials), as the ASGI instrumentation builds it."""
    server = scope.get("server")
    host = f"{server[0]}:{server[1]}" if server and server[1] is not None else (
        server[0] if server else "")
    return f"{scope.get('scheme', 'http')}://{host}{scope.get('path', '')}"
