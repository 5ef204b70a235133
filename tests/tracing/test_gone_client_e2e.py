"""A client that leaves before its answer, under a real uvicorn: status 0, `cancelled`.

A handler that never reads its request (a plain GET) learns nothing of a client that
gave up: uvicorn drops the answer it sends afterwards, and ridtrace recorded a
delivered 200, outcome `ok`, on the line, the span and the count (middleware pass).
docs/log-schema.md: `status` 0 "when the client left before any response".
"""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest

from tests.support.otlp_receiver import OtlpReceiver
from tests.tracing.conftest import app_server, wait_for_lines


def _ask_then_leave(port: int, request: bytes, client_id: str, log: Path) -> None:
    """Send `request`, wait until its handler runs (its request.start), then close."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        wait_for_lines(log, lambda got: any(
            x.get("event") == "request.start" and x.get("x_request_id") == client_id
            for x in got))


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_client_gone_before_the_answer_is_cancelled_not_served(
    tmp_path: Path, receiver: OtlpReceiver, method: str
) -> None:
    log = tmp_path / "app.jsonl"
    body = b"x" * 1000 if method == "POST" else b""
    with app_server(tmp_path, receiver, app="tests.tracing.gone_client_app:create_app") as running:
        for n in range(2):
            client_id, name = f"gone-{method}-{n}", f"{method}-{n}"
            request = (f"{method} /held?name={name} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       f"x-request-id: {client_id}\r\ncontent-length: {len(body)}\r\n\r\n"
                       ).encode() + body
            _ask_then_leave(running.port, request, client_id, log)
            # Asked once the socket is closed: the server has seen it go by then.
            assert httpx.get(f"{running.url}/release", params={"name": name},
                             timeout=10).status_code == 200
        # A client that stays gets its answer, and it is recorded so.
        stayed = httpx.Client(base_url=running.url, timeout=10)
        with stayed:
            pending = stayed.build_request("GET", "/held", params={"name": f"stay-{method}"},
                                           headers={"x-request-id": f"stayed-{method}"})
            httpx.get(f"{running.url}/release", params={"name": f"stay-{method}"}, timeout=10)
            assert stayed.send(pending).text == "late"
        ours = (f"gone-{method}-", f"stayed-{method}")
        lines = wait_for_lines(log, lambda got: sum(
            x.get("event") == "request.end" and str(x.get("x_request_id", "")).startswith(ours)
            for x in got) == 3)
    ends = {x.get("x_request_id"): x for x in lines if x.get("event") == "request.end"}
    for n in range(2):
        end = ends[f"gone-{method}-{n}"]
        assert (end["status"], end["outcome"], end["bytes_out"]) == (0, "cancelled", 0), end
    assert (ends[f"stayed-{method}"]["status"], ends[f"stayed-{method}"]["outcome"]) == (200, "ok")
    spans = {s.attributes.get("x_request_id"): s for s in receiver.wait_until(
        lambda got: sum(str(s.attributes.get("x_request_id", "")).startswith(ours)
                        for s in got) == 3)}
    gone = spans[f"gone-{method}-0"]
    assert gone.attributes.get("outcome") == "cancelled"
    assert "http.response.status_code" not in gone.attributes
