"""The request's ids on the lines of an application's own standard-library handlers,
through `RequestIdsFilter` in uvicorn's ``--log-config``, without `configure_logging`."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.servers import RunningServer, child_pythonpath, free_port, run_server

FIELDS = ("request_id", "x_request_id", "trace_id", "name", "message")


def _log_config(log_path: Path) -> dict[str, object]:
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"ids": {"()": "ridtrace.tracing.RequestIdsFilter", "default": "-"}},
        "formatters": {"plain": {"format": "|".join(f"%({f})s" for f in FIELDS)}},
        "handlers": {"file": {"class": "logging.FileHandler", "filename": str(log_path),
                              "formatter": "plain", "filters": ["ids"]}},
        "loggers": {
            "uvicorn": {"handlers": ["file"], "level": "INFO", "propagate": False},
            "uvicorn.error": {"handlers": ["file"], "level": "INFO", "propagate": False},
            "uvicorn.access": {"handlers": ["file"], "level": "INFO", "propagate": False},
            "shop": {"handlers": ["file"], "level": "INFO", "propagate": False},
        },
    }


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningServer, Path]]:
    workdir = tmp_path_factory.mktemp("stdlib-ids")
    log_path = workdir / "app.log"
    config = workdir / "logging.json"
    config.write_text(json.dumps(_log_config(log_path)), encoding="utf-8")
    port = free_port()
    argv = ["-m", "uvicorn", "tests.tracing.stdlib_only_app:app", "--host", "127.0.0.1",
            "--port", str(port), "--log-config", str(config)]
    with run_server(argv, port=port, workdir=workdir, ready_path="/order",
                    env={"PYTHONPATH": child_pythonpath()}) as running:
        yield running, log_path


def _lines_naming(log_path: Path, request_id: str, count: int) -> list[dict[str, str]]:
    """The log's lines for one request, once ``count`` of them are written."""
    deadline = time.monotonic() + 20
    while True:
        text = log_path.read_text(encoding="utf-8") if log_path.exists() else ""
        rows = [dict(zip(FIELDS, line.split("|", len(FIELDS) - 1), strict=True))
                for line in text.splitlines() if line.count("|") >= len(FIELDS) - 1]
        mine = [row for row in rows if row["request_id"] == request_id]
        if len(mine) >= count or time.monotonic() > deadline:
            return mine
        time.sleep(0.05)


def test_an_application_line_and_uvicorns_access_line_carry_both_ids(
    server: tuple[RunningServer, Path],
) -> None:
    running, log_path = server
    response = httpx.get(running.url + "/order", headers={"x-request-id": "client-7"}, timeout=10)
    assert response.text == "placed"
    request_id = response.headers["x-server-request-id"]
    lines = _lines_naming(log_path, request_id, 2)
    by_logger = {row["name"]: row for row in lines}
    assert set(by_logger) == {"shop.orders", "uvicorn.access"}, lines
    for row in lines:
        assert row["x_request_id"] == "client-7"
        assert len(row["trace_id"]) == 32 and row["trace_id"] != "-"
    assert by_logger["shop.orders"]["message"] == "order placed"


def test_a_request_without_a_client_id_gets_the_default_for_it(
    server: tuple[RunningServer, Path],
) -> None:
    running, log_path = server
    response = httpx.get(running.url + "/order", timeout=10)
    request_id = response.headers["x-server-request-id"]
    (line, *_) = [row for row in _lines_naming(log_path, request_id, 2)
                  if row["name"] == "shop.orders"]
    assert line["x_request_id"] == "-"


def test_the_servers_exception_line_names_the_request_that_crashed(
    server: tuple[RunningServer, Path],
) -> None:
    running, log_path = server
    response = httpx.get(running.url + "/crash", headers={"x-request-id": "client-9"}, timeout=10)
    assert response.status_code == 500
    # The 500 is uvicorn's own answer, so the id comes from the log: the crash line
    # is the one naming the client's id with uvicorn.error's message.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        text = log_path.read_text(encoding="utf-8")
        crashes = [line for line in text.splitlines()
                   if "|client-9|" in line and "Exception in ASGI application" in line]
        if crashes:
            break
        time.sleep(0.05)
    (crash,) = crashes
    request_id = crash.split("|")[0]
    assert request_id != "-" and len(request_id) >= 16
