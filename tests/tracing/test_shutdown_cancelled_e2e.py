"""A request uvicorn cancels at the end of its graceful shutdown still has its
``request.end``, in an app whose only telemetry is ``configure_logging``."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.support.servers import free_port, run_server, stop_process
from tests.tracing.conftest import read_lines, wait_for_lines


def test_a_request_cancelled_at_the_graceful_timeout_writes_its_request_end(
    tmp_path: Path,
) -> None:
    # uvicorn cancels what outlived --timeout-graceful-shutdown just before the lifespan
    # shutdown, and re-raises SIGTERM once that is done: the cancelled request's
    # middleware had not unwound by then (the middleware waited for running requests
    # only when ridtrace owned a tracer or meter provider), so the process died before
    # its request.end was written.
    log_path = tmp_path / "app.jsonl"
    port = free_port()
    argv = ["-m", "uvicorn", "tests.tracing.logging_only_app:create_app", "--factory",
            "--host", "127.0.0.1", "--port", str(port), "--timeout-graceful-shutdown", "1"]
    with (
        run_server(argv, port=port, workdir=tmp_path, env={"RIDTRACE_TEST_LOG": str(log_path)})
        as server,
        socket.create_connection(("127.0.0.1", port)) as stream,
    ):
        stream.sendall(b"GET /endless HTTP/1.1\r\nHost: localhost\r\nx-request-id: endless-1\r\n\r\n")
        assert stream.recv(1024).startswith(b"HTTP/1.1 200 ")
        wait_for_lines(log_path, lambda lines: any(
            x.get("event") == "request.start" and x.get("x_request_id") == "endless-1"
            for x in lines
        ))
        stop_process(server.process)  # SIGTERM, and wait, with the stream still open
        assert server.process.returncode is not None
    lines = read_lines(log_path)
    ends = [x for x in lines
            if x.get("event") == "request.end" and x.get("x_request_id") == "endless-1"]
    assert len(ends) == 1
    assert ends[0]["outcome"] == "cancelled" and ends[0]["status"] == 200
    # uvicorn logs "Exception in ASGI application" with the CancelledError after the
    # request's context is gone: only an Exception carried the ids to that line, and the
    # ERROR and its traceback named no request. (Moved here from a frontend test whose
    # body still arriving at stop is now ended by the frontend itself, with a 503.)
    errors = [x for x in lines if x["level"] == "ERROR" and "exception" in x]
    assert errors, [x["message"] for x in lines][-10:]
    for line in errors:
        assert line["exception"].startswith("CancelledError"), line["exception"]
        assert line.get("request_id") == ends[0]["request_id"], line["message"]
        assert line.get("x_request_id") == "endless-1"
        assert line.get("trace_id") == ends[0]["trace_id"]
