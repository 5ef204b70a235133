"""A FastAPI app built as applications are split up: routers included with a prefix,
a sub-app mounted with routers of its own, and plain ASGI apps mounted beside them.
Run under a real uvicorn by tests/tracing/test_route_names_e2e.py.

Configured by environment: RIDTRACE_TEST_LOG (log file), OTEL_* (span and metric export).
"""

from __future__ import annotations

import os

from fastapi import APIRouter, FastAPI
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from ridtrace import (
    RequestTracingMiddleware,
    configure_logging,
    configure_metrics,
    configure_tracing,
    telemetry_lifespan,
)


def create_app() -> FastAPI:
    configure_logging(os.environ["RIDTRACE_TEST_LOG"], service="routers-app")
    configure_tracing("routers-app")
    configure_metrics("routers-app")
    app = FastAPI(telemetry={"tracing": False}, lifespan=telemetry_lifespan)  # type: ignore[call-arg]

    users = APIRouter()

    @users.get("/{key}")
    async def user(key: str) -> dict[str, str]:
        return {"user": key}

    items = APIRouter()

    @items.get("/{key}")
    async def item(key: str) -> dict[str, str]:
        return {"item": key}

    admin = APIRouter()
    admin.include_router(users, prefix="/users")  # nested: /admin/users/{key}

    app.include_router(users, prefix="/users")
    app.include_router(items, prefix="/items")
    app.include_router(admin, prefix="/admin")

    billing = FastAPI(telemetry={"tracing": False})  # type: ignore[call-arg]
    invoices = APIRouter()

    @invoices.get("/{number}")
    async def invoice(number: int) -> dict[str, int]:
        return {"number": number}

    billing.include_router(invoices, prefix="/v1/invoices")
    app.mount("/billing", billing)

    async def exposition(scope: Scope, receive: Receive, send: Send) -> None:
        # A plain ASGI app, as prometheus_client's make_asgi_app() or StaticFiles is.
        await PlainTextResponse("requests_total 1\n")(scope, receive, send)

    app.mount("/prometheus", exposition)

    # A sub-app mounted on a router that is included with a prefix.
    reports = FastAPI(telemetry={"tracing": False})  # type: ignore[call-arg]

    @reports.get("/daily/{day}")
    async def daily(day: str) -> dict[str, str]:
        return {"day": day}

    team = APIRouter()
    team.mount("/reports", reports)
    app.include_router(team, prefix="/team")

    # Starlette routes (app.add_route), as FastAPI serves /docs and /openapi.json: at
    # the top, in a router included with a prefix, in a mounted sub-app.
    async def plain(request: Request) -> PlainTextResponse:
        return PlainTextResponse("plain")

    app.add_route("/plain/{name}", plain)
    assets = APIRouter()
    assets.add_route("/{name}", plain)
    app.include_router(assets, prefix="/assets")
    billing.add_route("/status", plain)
    app.add_middleware(RequestTracingMiddleware)
    return app
