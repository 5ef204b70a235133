"""The middleware around a user's own ``@app.middleware("http")`` function, under a
real uvicorn (``BaseHTTPMiddleware`` re-sends the response; ``ASGITransport`` would hide
how a server treats what is sent after its client left)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.servers import RunningServer, child_pythonpath, free_port, run_server
from tests.tracing.conftest import wait_for_lines


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningServer, Path]]:
    workdir = tmp_path_factory.mktemp("decorated")
    log_path = workdir / "app.jsonl"
    port = free_port()
    env = {"RIDTRACE_TEST_LOG": str(log_path), "PYTHONPATH": child_pythonpath()}
    argv = ["-m", "uvicorn", "tests.tracing.decorated_app:create_app", "--factory",
            "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    with run_server(argv, port=port, workdir=workdir, env=env) as running:
        yield running, log_path


def test_a_stream_its_client_left_is_cancelled_behind_a_base_http_middleware(
    server: tuple[RunningServer, Path],
) -> None:
    """The client reads one chunk of a 1000-token stream and hangs up. Behind a
    BaseHTTPMiddleware the stream's end is still sent (an empty last body message, after
    uvicorn reported the client gone, which uvicorn drops): request.end said outcome
    ``ok``, as if the caller had received the whole answer."""
    running, log_path = server
    with (
        httpx.Client(timeout=10) as client,
        client.stream("GET", running.url + "/tokens") as response,
    ):
        assert response.headers["x-handled-by"] == "decorated-app"
        request_id = response.headers["x-server-request-id"]
        next(response.iter_raw())  # the stream is live; now walk away
    lines = wait_for_lines(log_path, lambda lines: any(
        x.get("event") == "request.end" and x.get("request_id") == request_id for x in lines
    ))
    (end,) = [x for x in lines if x.get("event") == "request.end"
              and x.get("request_id") == request_id]
    assert (end["status"], end["outcome"]) == (200, "cancelled"), end
    assert end["bytes_out"] < len(b"token 999\n") * 1000


def test_a_stream_read_to_its_end_behind_a_base_http_middleware_is_ok(
    server: tuple[RunningServer, Path],
) -> None:
    running, log_path = server
    response = httpx.get(running.url + "/tokens?count=5", timeout=10)
    assert response.text == "".join(f"token {i}\n" for i in range(5))
    request_id = response.headers["x-server-request-id"]
    lines = wait_for_lines(log_path, lambda lines: any(
        x.get("event") == "request.end" and x.get("request_id") == request_id for x in lines
    ))
    (end,) = [x for x in lines if x.get("event") == "request.end"
              and x.get("request_id") == request_id]
    assert (end["status"], end["outcome"], end["bytes_out"]) == (200, "ok", len(response.content))


def test_a_stream_that_crashed_is_an_error_though_its_end_went_out(
    server: tuple[RunningServer, Path],
) -> None:
    """The route's stream raises after its first token. The BaseHTTPMiddleware ends the
    response it re-sends (the client sees a complete, cut-short body) and then raises
    the route's exception, which uvicorn logs as an ERROR: request.end said INFO,
    outcome ``ok``, because the body had finished."""
    running, log_path = server
    response = httpx.get(running.url + "/breaks", timeout=10)
    assert (response.status_code, response.text) == (200, "token 0\n")
    request_id = response.headers["x-server-request-id"]
    lines = wait_for_lines(log_path, lambda lines: any(
        x.get("event") == "request.end" and x.get("request_id") == request_id for x in lines
    ))
    (end,) = [x for x in lines if x.get("event") == "request.end"
              and x.get("request_id") == request_id]
    assert (end["status"], end["outcome"], end["level"]) == (200, "error", "WARN"), end
