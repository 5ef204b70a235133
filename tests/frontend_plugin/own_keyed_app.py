"""An application that mounts `create_router` itself and adds the key check with the
documented one line (docs/frontend-plugin.md, Access control), for a real uvicorn.

Configured by environment: RIDTRACE_TEST_LOG (log file), RIDTRACE_TEST_KEY (the key).
"""

from __future__ import annotations

import os

from fastapi import APIRouter, FastAPI

from ridtrace import RequestTracingMiddleware, configure_logging
from ridtrace.frontend_plugin import Frontend, FrontendSettings, create_router
from ridtrace.frontend_plugin.auth import SharedSecretMiddleware

configure_logging(os.environ["RIDTRACE_TEST_LOG"], service="own-app")
settings = FrontendSettings(workers=("http://127.0.0.1:9",),
                            api_keys=(os.environ["RIDTRACE_TEST_KEY"],))
app = FastAPI(telemetry={"tracing": False, "metrics": False, "logs": False})
app.include_router(create_router(frontend=Frontend(settings)))
shop = APIRouter()


@shop.get("/items/{item}")
async def item(item: int) -> dict[str, int]:
    return {"item": item}


app.include_router(shop, prefix="/shop")
app.add_middleware(SharedSecretMiddleware, secrets=settings.api_keys)
app.add_middleware(RequestTracingMiddleware)
