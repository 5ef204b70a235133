"""A gateway that forwards each request to a backend (`app_under_test`), as a user wires
one: the client's ``x-request-id`` passed on, the trace context by `propagate.inject`.

Configured by environment: RIDTRACE_TEST_LOG (log file), RIDTRACE_TEST_BACKEND (the
backend's base URL), OTEL_* (span export).
"""

from __future__ import annotations

import os

import httpx
from fastapi import FastAPI, Request
from loguru import logger
from opentelemetry import propagate

from ridtrace import (
    RequestTracingMiddleware,
    configure_logging,
    configure_tracing,
    current_request_id,
)
from tests.tracing.app_under_test import _fastapi_without_native_spans


def create_app() -> FastAPI:
    logger.remove()
    configure_logging(os.environ["RIDTRACE_TEST_LOG"], service="gateway")
    configure_tracing("gateway")
    app = _fastapi_without_native_spans()
    app.add_middleware(RequestTracingMiddleware)
    backend = os.environ["RIDTRACE_TEST_BACKEND"]

    @app.get("/")
    async def root() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/forward")
    async def forward(request: Request) -> dict[str, object]:
        headers: dict[str, str] = {}
        propagate.inject(headers)
        client_id = request.headers.get("x-request-id")
        if client_id is not None:
            headers["x-request-id"] = client_id
        async with httpx.AsyncClient() as client:
            answer = await client.get(backend + "/ids", headers=headers, timeout=10)
        return {"request_id": current_request_id(), "sent": headers, "backend": answer.json()}

    return app
