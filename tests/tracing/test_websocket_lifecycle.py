"""A WebSocket connection's request.start / request.end, and what forensics reads of them.

Without them, a connection that sent a deprecated id header left no record of it after
the process's one WARN: `audit` counted one connection of three where the metric said
three, against DESIGN.md's "every request that sent one still records which". And
`ridtrace trace` showed a clean connection as "start not in logs", "no answer logged".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi import FastAPI, WebSocket
from loguru import logger
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from ridtrace import RequestTracingMiddleware
from ridtrace.cli.main import main
from tests.tracing.conftest import read_lines


def _app() -> FastAPI:
    app = FastAPI(telemetry={"tracing": False})

    @app.websocket("/rooms/{room}")
    async def chat(websocket: WebSocket, room: str) -> None:
        await websocket.accept()
        logger.info("joined")
        await websocket.send_text(await websocket.receive_text())
        await websocket.close()

    @app.websocket("/private")
    async def private(websocket: WebSocket) -> None:
        await websocket.close(code=1008)  # denied before accepting

    @app.websocket("/broken")
    async def broken(websocket: WebSocket) -> None:
        await websocket.accept()
        raise RuntimeError("engine fell over")

    app.add_middleware(RequestTracingMiddleware)
    return app


def _pairs(log_file: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """Each request's request.start and request.end, by request_id."""
    pairs: dict[str, dict[str, dict[str, Any]]] = {}
    for line in read_lines(log_file):
        if line.get("event") in ("request.start", "request.end"):
            pairs.setdefault(line["request_id"], {})[line["event"]] = line
    return pairs


def test_a_connection_logs_its_start_and_end_with_the_handshakes_answer(log_file: Path) -> None:
    with TestClient(_app()) as client:
        with client.websocket_connect("/rooms/lobby", headers={"x-request-id": "ws-1"}) as ws:
            ws.send_text("hi")
            assert ws.receive_text() == "hi"
        with pytest.raises(WebSocketDisconnect), client.websocket_connect("/private"):
            pass
        with pytest.raises(RuntimeError), client.websocket_connect("/broken") as ws:
            ws.receive_text()
    ends = {x["request.end"]["path"]: x for x in _pairs(log_file).values()}
    lobby = ends["/rooms/lobby"]
    assert lobby["request.start"]["method"] == "GET"
    assert lobby["request.start"]["protocol"] == "websocket"
    end = lobby["request.end"]
    assert (end["status"], end["outcome"], end["route"], end["x_request_id"]) == (
        101, "ok", "/rooms/{room}", "ws-1")
    assert end["duration_ms"] >= 0 and end["protocol"] == "websocket"
    denied = ends["/private"]["request.end"]
    assert (denied["status"], denied["outcome"]) == (403, "ok")
    failed = ends["/broken"]["request.end"]
    assert (failed["status"], failed["outcome"], failed["error"], failed["level"]) == (
        101, "error", "RuntimeError", "WARN")


def test_every_connection_that_sent_a_deprecated_header_is_audited(log_file: Path) -> None:
    with TestClient(_app()) as client:
        for n in range(3):
            with client.websocket_connect(
                "/rooms/lobby", headers={"x-dynamo-request-id": f"old-{n}",
                                         "x-request-id": f"ws-{n}"}) as ws:
                ws.send_text("hi")
                ws.receive_text()
    audited = CliRunner().invoke(main, ["audit", str(log_file), "--format", "json", "-q"])
    assert audited.exit_code == 0, audited.output
    (row,) = json.loads(audited.stdout)["rows"]
    assert (row["header"], row["requests"]) == ("x-dynamo-request-id", 3), row
    analyzed = CliRunner().invoke(main, ["analyze", str(log_file), "--format", "json", "-q"])
    assert analyzed.exit_code == 0, analyzed.output
    summary = json.loads(analyzed.stdout)["summary"]
    assert summary["requests"] == 3 and summary["errors"] == 0 and not summary["incomplete"]


def test_trace_shows_a_clean_connection_with_its_start_and_answer(log_file: Path) -> None:
    with TestClient(_app()) as client, client.websocket_connect(
            "/rooms/lobby", headers={"x-request-id": "ws-trace"}) as ws:
        ws.send_text("hi")
        ws.receive_text()
    shown = CliRunner().invoke(main, ["trace", "ws-trace", str(log_file)], terminal_width=120)
    assert shown.exit_code == 0, shown.output
    assert "start not in logs" not in shown.stdout
    assert "no answer logged" not in shown.stdout
    assert "/rooms/{room}" in shown.stdout and "101" in shown.stdout
