"""Callers that go away at every stage of a request, on a real frontend and workers.

Each stage is reached on an observable condition (a log line, the registry's counters),
never after a nap: the client leaves while the frontend is certainly where the test
says it is.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.frontend_plugin.conftest import Proc, Stack, start_stack
from tests.frontend_plugin.traffic import PATHS, ROUTES, build


def _wait_lines(
    proc: Proc, predicate: Callable[[list[dict[str, object]]], bool], *, timeout: float = 30.0
) -> list[dict[str, object]]:
    deadline = time.monotonic() + timeout
    while True:
        lines = proc.lines()
        if predicate(lines):
            return lines
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not reached in {proc.log}")
        time.sleep(0.02)


def _ends_for(lines: list[dict[str, object]], client_id: str) -> list[dict[str, object]]:
    return [x for x in lines if x.get("event") == "request.end" and x.get("x_request_id") == client_id]


def _leave_mid_upload(stack: Stack, path: str, client_id: str) -> None:
    """Send the head and part of the body, wait until the frontend started the
    request (``request.start`` is written before the body is read), then hang up."""
    with socket.create_connection(("127.0.0.1", stack.frontend.port), timeout=10) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            f"x-request-id: {client_id}\r\ncontent-length: 4096\r\n\r\n"
            '{"model": "echo", "stream": tr'.encode()
        )
        _wait_lines(stack.frontend, lambda lines: any(
            x.get("event") == "request.start" and x.get("x_request_id") == client_id
            for x in lines))


def test_a_client_leaving_mid_upload_is_cancelled_not_a_server_error(tmp_path: Path) -> None:
    # Before the fix the half-read body raised ClientDisconnect out of the route: the
    # middleware answered 500, request.end said outcome 'error' and uvicorn logged
    # 'Exception in ASGI application' for every client that gave up mid-upload.
    with start_stack(tmp_path, workers=[[]]) as stack:
        ids = {route: f"upload-gone-{route}" for route in ROUTES}
        for route in ROUTES:
            _leave_mid_upload(stack, PATHS[route], ids[route])
        lines = _wait_lines(stack.frontend, lambda lines: all(
            _ends_for(lines, client_id) for client_id in ids.values()))
        for route, client_id in ids.items():
            (end,) = _ends_for(lines, client_id)
            assert (end["status"], end["outcome"]) == (0, "cancelled"), (route, end)
        assert not [x for x in lines if x.get("level") == "ERROR"], "no traceback, no error line"
        snap = stack.inflight()
        assert snap["registered"] == snap["inflight"] == 0, snap  # nothing was registered
        metrics = httpx.get(stack.url + "/metrics", timeout=5).text
        for route in ROUTES:
            assert f'outcome="error",route="{PATHS[route]}"' not in metrics
            assert f'outcome="cancelled",route="{PATHS[route]}"' in metrics
        # The frontend still serves every route afterwards.
        for route in ROUTES:
            # Each route's own body: one body for all (a string `prompt` on /v1/responses
            # names a stored template there) is refused by the stricter routes.
            path, headers, body = build(route, "still here", None, False)
            answer = httpx.post(stack.url + path, headers=headers, timeout=10, json=body)
            assert answer.status_code == 200, (route, answer.text)


def test_a_client_leaving_with_pipelined_requests_is_cancelled_not_a_server_error(
    tmp_path: Path,
) -> None:
    # uvicorn marks only the newest request of a connection as disconnected. With
    # requests pipelined behind a stream, the one being answered is an older one: its
    # next write went to the closed transport, uvloop raised RuntimeError, and every such
    # client was an 'Exception in ASGI application' traceback and outcome 'error'.
    body = b'{"prompt": "a b c d e f g h i j", "max_tokens": 400, "stream": true}'
    request = (b"POST /v1/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n"
               b"content-type: application/json\r\nx-request-id: piped\r\n"
               b"content-length: %d\r\n\r\n" % len(body) + body)
    with start_stack(tmp_path, workers=[["--token-delay", "0.01"]]) as stack:
        with socket.create_connection(("127.0.0.1", stack.frontend.port), timeout=10) as sock:
            sock.sendall(request * 3)
            assert sock.recv(65536).startswith(b"HTTP/1.1 200")  # the first one streams
        lines = _wait_lines(stack.frontend, lambda lines: bool(_ends_for(lines, "piped")))
        (end,) = _ends_for(lines, "piped")  # the others never started
        assert end["outcome"] == "cancelled", end
        assert not [x for x in lines if x.get("level") == "ERROR"], "no traceback, no error line"
        stack.wait_inflight(lambda snap: snap["inflight"] == 0)
        assert httpx.post(stack.url + "/v1/completions", json={"prompt": "after"},
                          timeout=10).status_code == 200
