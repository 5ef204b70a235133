"""docs/tracing.md's closing `StreamingResponse`, served under a real uvicorn by
`test_closing_stream_e2e`: a stream whose client left is closed in its own request.

A slow send inside ridtrace (a compressor, a proxy) holds each chunk, so the client can
leave while one is on its way: Starlette then leaves the generator paused, and the
garbage collector closed it later in whichever request ran the collection.

Configured by environment: RIDTRACE_TEST_LOG (log file).
"""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
from loguru import logger
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ridtrace import RequestTracingMiddleware, configure_logging


class ClosingStreamingResponse(StreamingResponse):
    """docs/tracing.md's recipe: the body iterator closed when the stream ends."""

    def __init__(self, content: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(content, *args, **kwargs)
        self.content = content

    async def stream_response(self, send: Send) -> None:
        try:
            await super().stream_response(send)
        finally:
            with anyio.CancelScope(shield=True):  # the stream was cancelled
                close = getattr(self.body_iterator, "aclose", None)
                if close is not None:
                    await close()
                # A `def` generator runs in Starlette's thread pool, whose wrapper
                # never closes it: closed here, in a thread, with the request's ids.
                if not hasattr(self.content, "aclose") and hasattr(self.content, "close"):
                    await anyio.to_thread.run_sync(self.content.close)


class SlowSend:
    """Each body chunk takes a moment to pass, inside ridtrace."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def slow(message: Message) -> None:
            if message["type"] == "http.response.body":
                await asyncio.sleep(0.05)
            await send(message)

        await self.app(scope, receive, slow if scope["type"] == "http" else send)


async def stream(request: Request) -> StreamingResponse:
    async def chunks() -> AsyncIterator[bytes]:
        try:
            for _ in range(10_000):
                yield b"x" * 100 + b"\n"
        finally:
            logger.info("stream closed")

    return ClosingStreamingResponse(chunks())


async def sync_stream(request: Request) -> StreamingResponse:
    def chunks() -> Iterator[bytes]:
        try:
            for _ in range(10_000):
                yield b"x" * 100 + b"\n"
        finally:
            logger.info("stream closed")

    return ClosingStreamingResponse(chunks())


async def collect(request: Request) -> PlainTextResponse:
    gc.collect()  # what the collector does, whenever it runs
    return PlainTextResponse("collected")


def create_app() -> Starlette:
    logger.remove()
    configure_logging(os.environ["RIDTRACE_TEST_LOG"], service="closing-stream")
    return Starlette(routes=[Route("/", collect), Route("/stream", stream),
                             Route("/sync-stream", sync_stream)],
                     middleware=[Middleware(RequestTracingMiddleware), Middleware(SlowSend)])
