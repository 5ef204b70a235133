"""The middleware in applications the team did not write: their exception handlers,
background tasks, sub-apps, other middlewares and the ASGI extensions their servers offer."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
from fastapi import BackgroundTasks, FastAPI
from loguru import logger
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, StreamingResponse
from starlette.routing import Route
from starlette.types import Message

from ridtrace import RequestTracingMiddleware, current_request_id
from tests.tracing.conftest import read_lines


def _provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _get(app: Any, path: str, **kwargs: Any) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.get(path, **kwargs)

    return asyncio.run(go())


def _scope(path: str, **extra: Any) -> dict[str, Any]:
    """An HTTP scope as a server builds it, with the ASGI spec version it speaks."""
    return {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1", "method": "GET", "scheme": "http", "path": path,
        "raw_path": path.encode(), "query_string": b"", "root_path": "", "headers": [],
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 80), **extra,
    }  # fmt: skip


def _ends(log_file: Path) -> list[dict[str, Any]]:
    return [x for x in read_lines(log_file) if x.get("event") == "request.end"]


def test_background_tasks_keep_the_ids_but_do_not_count_in_the_requests_duration(
    log_file: Path,
) -> None:
    # Starlette runs a response's background tasks after its last byte, inside the
    # app's call: a 0.4 s e-mail task made a 2 ms request 400 ms long on request.end
    # and on its span.
    provider, exporter = _provider()
    app = FastAPI(telemetry={"tracing": False})

    def send_mail() -> None:
        time.sleep(0.4)
        logger.info("mail sent")

    @app.get("/signup")
    async def signup(tasks: BackgroundTasks) -> dict[str, str | None]:
        tasks.add_task(send_mail)
        return {"request_id": current_request_id()}

    app.add_middleware(RequestTracingMiddleware, tracer_provider=provider)
    request_id = _get(app, "/signup").json()["request_id"]
    mail = next(x for x in read_lines(log_file) if x["message"] == "mail sent")
    assert mail["request_id"] == request_id
    (end,) = _ends(log_file)
    assert end["outcome"] == "ok" and end["duration_ms"] < 300
    (span,) = exporter.get_finished_spans()
    assert span.end_time is not None and span.start_time is not None
    assert span.end_time - span.start_time < 300_000_000


def test_a_client_gone_mid_stream_under_an_asgi_2_4_server_is_cancelled(
    log_file: Path,
) -> None:
    # ASGI 2.4 servers make send() fail once the client left, and Starlette's
    # StreamingResponse then raises ClientDisconnect: that is a caller walking away,
    # not a server error (it was logged WARN outcome error, the span marked ERROR).
    async def events(request: Request) -> StreamingResponse:
        async def body() -> Any:
            for index in range(100):
                yield b"data: %d\n\n" % index
                await asyncio.sleep(0)

        return StreamingResponse(body(), media_type="text/event-stream")

    app = RequestTracingMiddleware(Starlette(routes=[Route("/events", events)]))
    sent: list[Message] = []

    async def receive() -> Message:
        await asyncio.sleep(30)
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if len(sent) == 3:
            raise OSError("client went away")
        sent.append(message)

    async def go() -> None:
        try:
            await app(_scope("/events"), receive, send)
        except Exception as exc:  # the app's own exception, re-raised unchanged
            assert type(exc).__name__ == "ClientDisconnect"

    asyncio.run(go())
    (end,) = _ends(log_file)
    assert (end["outcome"], end["level"], end["status"]) == ("cancelled", "INFO", 200)


def test_a_file_sent_with_the_pathsend_extension_is_a_finished_response(
    log_file: Path, tmp_path: Path
) -> None:
    # Starlette's FileResponse hands the file to a server that offers
    # http.response.pathsend (Granian does) instead of sending body messages: every
    # such download was logged as outcome error, 0 bytes out.
    document = tmp_path / "report.pdf"
    document.write_bytes(b"%PDF" + b"x" * 996)

    async def download(request: Request) -> FileResponse:
        return FileResponse(document)

    app = RequestTracingMiddleware(Starlette(routes=[Route("/report", download)]))
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = _scope("/report", extensions={"http.response.pathsend": {}})
    asyncio.run(app(scope, receive, send))
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.pathsend"]
    (end,) = _ends(log_file)
    assert (end["outcome"], end["level"], end["bytes_out"]) == ("ok", "INFO", 1000)
