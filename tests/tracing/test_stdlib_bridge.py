"""The standard library's records in loguru: they keep where they were logged."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import httpx
import pytest
from loguru import logger
from starlette.types import Message, Receive, Scope, Send

from ridtrace import RequestTracingMiddleware, configure_logging
from tests.tracing.conftest import read_lines


def _log_from_a_library() -> int:
    """Logs one standard-library warning; returns the line it was logged on."""
    line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
    logging.getLogger("some.library").warning("from a library")
    return line


def test_a_stdlib_record_keeps_its_call_site_in_other_loguru_handlers(tmp_path: Path) -> None:
    # Loguru's default stderr handler (and any console handler an application adds) shows
    # `{name}:{function}:{line}`. Every uvicorn and library line read
    # `uvicorn.error:_forward:85`, the bridge's own function and line, on every terminal
    # running a configure_logging app under uvicorn, whatever logged it.
    records: list[dict[str, Any]] = []
    configure_logging(tmp_path / "app.jsonl", service="svc")
    probe = logger.add(lambda message: records.append(message.record), format="{message}")
    try:
        line = _log_from_a_library()
    finally:
        logger.remove(probe)
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)
    (record,) = records
    assert record["name"] == "some.library"
    assert (record["function"], record["line"]) == ("_log_from_a_library", line)
    assert record["module"] == "test_stdlib_bridge"
    assert record["file"].name == "test_stdlib_bridge.py"
    assert record["file"].path == __file__


def _get_through_httpx() -> None:
    """One request through httpx's client, which logs it at INFO (`HTTP Request: ...`)."""
    transport = httpx.MockTransport(lambda request: httpx.Response(204))
    with httpx.Client(transport=transport) as client:
        client.get("http://upstream.test/items")


def test_a_level_the_application_gave_httpx_is_kept(tmp_path: Path) -> None:
    # configure_logging quiets httpx's per-request INFO lines, but it also raised a level
    # the application had set on purpose (to log its outbound calls) to WARNING: those
    # lines were silently gone.
    path = tmp_path / "app.jsonl"
    before = {name: logging.getLogger(name).level for name in ("httpx", "httpcore")}
    try:
        configure_logging(path, service="svc", level="ERROR")
        configure_logging(path, service="svc")
        _get_through_httpx()  # left quiet by default
        logging.getLogger("httpx").warning("a warning still goes through")
        logging.getLogger("httpx").setLevel(logging.INFO)
        configure_logging(path, service="svc")  # an app factory run once more
        _get_through_httpx()
    finally:
        logger.remove()
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)
        for name, level in before.items():
            logging.getLogger(name).setLevel(level)
    warning, line = read_lines(path)
    assert warning["message"] == "a warning still goes through"
    assert line["logger"] == "httpx"
    assert line["message"].startswith("HTTP Request: GET http://upstream.test/items")


def test_the_sdks_http_clients_per_request_lines_stay_quiet(tmp_path: Path) -> None:
    # The openai and anthropic SDKs send through httpx2 (and Starlette's TestClient):
    # each upstream call of a gateway wrote its INFO 'HTTP Request: ...' line into the
    # JSON log, where httpx's own were quieted.
    httpx2 = pytest.importorskip("httpx2")
    path = tmp_path / "app.jsonl"
    before = {name: logging.getLogger(name).level for name in ("httpx2", "httpcore2")}
    try:
        configure_logging(path, service="svc")
        transport = httpx2.MockTransport(lambda request: httpx2.Response(204))
        with httpx2.Client(transport=transport) as client:
            client.get("http://upstream.test/items")
        logging.getLogger("httpx2").warning("a warning still goes through")
    finally:
        logger.remove()
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)
        for name, level in before.items():
            logging.getLogger(name).setLevel(level)
    assert [x["message"] for x in read_lines(path)] == ["a warning still goes through"]


def test_the_reloaders_per_change_lines_stay_quiet(tmp_path: Path) -> None:
    # `fastapi dev app.py`, or `uvicorn.run("app:app", reload=True)` in the app's own
    # module, runs the module (hence configure_logging) in the reloader process too,
    # whose watchfiles logs "N changes detected" at INFO for every change in the watched
    # folder, the log file's own writes included: with the root logger at INFO those
    # lines went into the log (and loguru's console) about three times a second, each
    # one the next change, for as long as the server ran.
    path = tmp_path / "app.jsonl"
    watcher = logging.getLogger("watchfiles.main")
    before = logging.getLogger("watchfiles").level
    try:
        configure_logging(path, service="svc")
        watcher.info("2 changes detected")  # what watchfiles.main writes per change
        watcher.warning("a warning still goes through")
        logging.getLogger("watchfiles").setLevel(logging.INFO)  # the application's choice
        configure_logging(path, service="svc")
        watcher.info("asked for")
    finally:
        logger.remove()
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)
        logging.getLogger("watchfiles").setLevel(before)
    assert [x["message"] for x in read_lines(path)] == ["a warning still goes through", "asked for"]


def test_a_crash_a_loop_callback_reports_names_the_request_it_escaped(tmp_path: Path) -> None:
    # daphne reports an application's exception from a timer callback of its own, with
    # exc_info=, outside the request's task and any except; the callback runs in the
    # context of whichever request last armed the loop's timer. Its "Exception inside
    # application" line named that other request (in flight or over), never the one
    # that crashed. Here request B arms the timer while A has crashed before it.
    path = tmp_path / "app.jsonl"
    server_log = logging.getLogger("daphne.server")

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["path"] == "/boom":
            raise RuntimeError("boom")
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    traced = RequestTracingMiddleware(app)

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        pass

    def request(path: str, client_id: str) -> Awaitable[None]:
        headers = [(b"x-request-id", client_id.encode())]
        return traced({"type": "http", "method": "GET", "path": path, "headers": headers},
                      receive, send)

    async def server() -> None:
        loop = asyncio.get_running_loop()
        crashed = asyncio.ensure_future(request("/boom", "A"))  # the server's task for A
        await asyncio.wait([crashed])
        reported = loop.create_future()

        def check_applications() -> None:  # the server's own timer, armed inside B
            server_log.error("Exception inside application: %s", crashed.exception(),
                             exc_info=crashed.exception())
            reported.set_result(None)

        async def b_app(scope: Scope, receive: Receive, send: Send) -> None:
            loop.call_soon(check_applications)
            await app(scope, receive, send)

        await RequestTracingMiddleware(b_app)(
            {"type": "http", "method": "GET", "path": "/hello",
             "headers": [(b"x-request-id", b"B")]}, receive, send)
        await reported

    configure_logging(path, service="svc")
    try:
        asyncio.run(server())
    finally:
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)
    lines = read_lines(path)
    (crash,) = [x for x in lines if x["message"].startswith("Exception inside application")]
    (a_start,) = [x for x in lines if x.get("event") == "request.start"
                  and x.get("x_request_id") == "A"]
    assert (crash["request_id"], crash["x_request_id"]) == (a_start["request_id"], "A")
    assert "RuntimeError: boom" in crash["traceback"]
