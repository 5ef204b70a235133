"""docs/tracing.md's closing `StreamingResponse`, under a real uvicorn: a stream whose
client left mid-chunk logs its `finally` under its own request's ids.

Starlette never closes a streaming body whose client left while a chunk was on its
way: the garbage collector closes it later, in the context of whichever request runs
the collection, and its lines named that other request (tracing.md said an `async def`
generator was closed in its own request; it is not, but for this recipe).
"""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest

from tests.support.otlp_receiver import OtlpReceiver
from tests.tracing.conftest import app_server, wait_for_lines


def _leave_mid_stream(port: int, client_id: str, path: str) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     f"x-request-id: {client_id}\r\n\r\n".encode())
        got = b""
        while len(got) < 300:  # the headers and a chunk or two: the stream is on
            got += sock.recv(4096)


# An `async def` generator and a `def` one, which Starlette runs in its thread pool
# behind a wrapper that closes nothing: the recipe closed only the wrapper, and the
# generator's `finally` still named the request that ran the collection.
@pytest.mark.parametrize("path", ["/stream", "/sync-stream"])
def test_a_stream_its_client_left_logs_its_finally_under_its_own_ids(
    tmp_path: Path, receiver: OtlpReceiver, path: str
) -> None:
    with app_server(tmp_path, receiver,
                    app="tests.tracing.closing_stream_app:create_app") as running:
        for n in range(3):
            _leave_mid_stream(running.port, f"left-{n}", path)
            # Another request runs a collection, as the collector would, whenever.
            assert httpx.get(running.url + "/", headers={"x-request-id": f"other-{n}"},
                             timeout=10).status_code == 200
        lines = wait_for_lines(tmp_path / "app.jsonl", lambda got: sum(
            x.get("message") == "stream closed" for x in got) == 3)
    closed = [x for x in lines if x.get("message") == "stream closed"]
    assert sorted(x.get("x_request_id") for x in closed) == ["left-0", "left-1", "left-2"]
    ends = {x["request_id"]: x for x in lines if x.get("event") == "request.end"}
    for line in closed:
        assert ends[line["request_id"]]["x_request_id"] == line["x_request_id"]
