"""A bare ASGI app wrapped in ``RequestTracingMiddleware`` whose ``/silent`` route returns
without answering (an application bug: a branch that forgets to respond) and whose
``/crash`` route raises before answering, run under a real uvicorn by
tests/tracing/test_unanswered_e2e.py.

Configured by environment: RIDTRACE_TEST_LOG (log file), OTEL_* (span export).
"""

from __future__ import annotations

import os

from starlette.types import ASGIApp, Receive, Scope, Send

from ridtrace import RequestTracingMiddleware, configure_logging, configure_tracing


def create_app() -> ASGIApp:
    configure_logging(os.environ["RIDTRACE_TEST_LOG"], service="unanswering", level="DEBUG")
    configure_tracing("unanswering")

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] == "/silent":
            return
        if scope["path"] == "/crash":
            raise RuntimeError("crash before the response")
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    return RequestTracingMiddleware(app)
