"""An app that logs only through the standard library, with its own handlers and
format (uvicorn's ``--log-config``), and ridtrace's middleware but no
`configure_logging`: `RequestIdsFilter` is what puts the ids on its lines.

Run under uvicorn by tests/tracing/test_stdlib_ids_e2e.py.
"""

from __future__ import annotations

import logging

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from ridtrace import RequestTracingMiddleware

log = logging.getLogger("shop.orders")


async def order(request: Request) -> PlainTextResponse:
    log.info("order placed")
    return PlainTextResponse("placed")


async def crash(request: Request) -> PlainTextResponse:
    raise RuntimeError("the order book is gone")


app = RequestTracingMiddleware(Starlette(routes=[
    Route("/order", order), Route("/crash", crash),
]))
