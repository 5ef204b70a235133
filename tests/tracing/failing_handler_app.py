"""A Starlette app whose exception handler itself fails, as an error reporter that is
down makes it fail: served under a real uvicorn by `test_failing_handler_e2e`.

Configured by environment: RIDTRACE_TEST_LOG (log file).
"""

from __future__ import annotations

import os

from loguru import logger
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from ridtrace import RequestTracingMiddleware, configure_logging, configure_tracing


def create_app() -> Starlette:
    logger.remove()
    configure_logging(os.environ["RIDTRACE_TEST_LOG"], service="failing-handler")
    configure_tracing("failing-handler")

    async def crash(request: Request) -> None:
        raise ValueError("endpoint failed")

    async def on_error(request: Request, exc: Exception) -> None:
        logger.error("error handler called for {}", type(exc).__name__)
        raise RuntimeError("error reporter unavailable")

    async def root(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    app = Starlette(routes=[Route("/", root), Route("/crash", crash)],
                    exception_handlers={Exception: on_error})
    app.add_middleware(RequestTracingMiddleware)
    return app
