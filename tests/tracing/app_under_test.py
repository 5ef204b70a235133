"""A small instrumented FastAPI app that end-to-end tests run under a real uvicorn.

Configured by environment: RIDTRACE_TEST_LOG (log file), OTEL_* (span export).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator

from fastapi import BackgroundTasks, FastAPI, Request
from fastapi.responses import StreamingResponse
from loguru import logger

from ridtrace import (
    RequestTracingMiddleware,
    annotate_request,
    configure_logging,
    configure_tracing,
    current_request_id,
    current_x_request_id,
)


class UnprintableError(Exception):
    """An exception whose ``str()`` raises, as a buggy library's can."""

    def __str__(self) -> str:
        raise RuntimeError("no text for this exception")


def _fastapi_without_native_spans() -> FastAPI:
    # This app tests ridtrace's own server span; the set-ups where FastAPI's built-in
    # telemetry or the contrib instrumentation owns the span are unit-tested apart.
    try:
        return FastAPI(telemetry={"tracing": False})  # type: ignore[call-arg]
    except TypeError:  # FastAPI releases before built-in telemetry
        return FastAPI()


def create_app() -> FastAPI:
    logger.remove()
    configure_logging(os.environ["RIDTRACE_TEST_LOG"], service="app-under-test", level="DEBUG")
    configure_tracing("app-under-test")
    app = _fastapi_without_native_spans()
    app.add_middleware(RequestTracingMiddleware)

    @app.get("/")
    async def root() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/ids")
    async def ids() -> dict[str, str | None]:
        logger.info("handler ran")
        logging.getLogger("thirdparty.lib").info("stdlib line inside the request")
        return {"request_id": current_request_id(), "x_request_id": current_x_request_id()}

    @app.get("/spawn")
    async def spawn() -> dict[str, str | None]:
        async def child() -> str | None:
            logger.info("child task ran")
            return current_request_id()

        return {"request_id": current_request_id(), "child": await asyncio.create_task(child())}

    @app.get("/stream")
    async def stream(chunks: int = 5, delay: float = 0.0) -> StreamingResponse:
        async def events() -> AsyncIterator[bytes]:
            for index in range(chunks):
                logger.info("chunk sent", chunk=index)
                yield f"data: {index} {current_request_id()}\n\n".encode()
                await asyncio.sleep(delay)

        return StreamingResponse(events(), media_type="text/event-stream")

    @app.get("/annotated")
    async def annotated() -> dict[str, str | None]:
        # Fields of the application's own for request.end: named like the line's own
        # (its business request id, a customer status) and objects.
        annotate_request(request_id="order-7", status="premium", tags=["a", "b"], plan={"tier": 2})
        # Named like a line's own keys, and like the writer's parameters.
        annotate_request(message="quota nearly used", level="gold", self="me")
        return {"request_id": current_request_id()}

    @app.post("/upload")
    async def upload(request: Request) -> dict[str, int]:
        return {"bytes": len(await request.body())}

    @app.post("/logged-params")
    async def logged_params(request: Request) -> dict[str, int]:
        # What an application does with a client's JSON: parse it with the standard
        # library (as Starlette's request.json() does) and log the fields it got.
        params = await request.json()
        logger.bind(**params).info("params received")
        return {"keys": len(params)}

    @app.post("/typed-upload")
    async def typed_upload(item: dict[str, str]) -> dict[str, int]:
        return {"keys": len(item)}

    @app.get("/boom")
    async def boom() -> None:
        raise RuntimeError("boom")

    @app.get("/boom-unprintable")
    async def boom_unprintable() -> None:
        raise UnprintableError


    @app.get("/after")
    async def after(tasks: BackgroundTasks) -> dict[str, str | None]:
        # Work after the response: the request (and its span) is still running while the
        # server already serves the next request of the connection.
        async def later() -> None:
            await asyncio.sleep(0.2)
            logger.info("after the response")

        tasks.add_task(later)
        return {"request_id": current_request_id(), "x_request_id": current_x_request_id()}

    held: dict[str, asyncio.Event] = {}

    @app.get("/held")
    async def held_after(key: str, tasks: BackgroundTasks) -> dict[str, str | None]:
        # Work after the response that lasts until /release names its key: the test
        # decides what happens while it runs, with no timing to guess.
        release = held.setdefault(key, asyncio.Event())

        async def until_released() -> None:
            await asyncio.wait_for(release.wait(), timeout=30)
            logger.info("released after the response")

        tasks.add_task(until_released)
        return {"request_id": current_request_id(), "x_request_id": current_x_request_id()}

    @app.get("/held-answer")
    async def held_answer(key: str) -> dict[str, str | None]:
        # An answer held until /release names its key: a request in flight for as long
        # as the test needs.
        await asyncio.wait_for(held.setdefault(key, asyncio.Event()).wait(), timeout=30)
        return {"request_id": current_request_id(), "x_request_id": current_x_request_id()}

    @app.get("/release")
    async def release(key: str) -> dict[str, bool]:
        held.setdefault(key, asyncio.Event()).set()
        return {"released": True}

    return app
