"""The standard library's records in loguru: they keep where they were logged."""

from __future__ import annotations

import inspect
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from loguru import logger

from ridtrace import configure_logging
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
