"""A stream whose client stopped reading, still running when the server stops."""

from __future__ import annotations

import json
import signal
import socket
from pathlib import Path

from tests.frontend_plugin.conftest import start_stack


def test_the_servers_line_for_a_stream_it_cancelled_at_stop_carries_its_ids(
    tmp_path: Path,
) -> None:
    # The client stopped reading, so the stop's in-band error event cannot be written:
    # uvicorn cancels the request when --graceful-timeout runs out and logs "Exception
    # in ASGI application" with the CancelledError, after the request's context is
    # gone. Only an Exception carried the ids to that line: the ERROR and its traceback
    # named no request.
    words = " ".join(["w" * 100] * 8000)  # /generate: ~4 GB of cumulative events
    body = json.dumps({"text": words, "stream": True, "rid": "stops-reading",
                       "sampling_params": {"max_new_tokens": 8192}}).encode()
    with start_stack(tmp_path, workers=[[]], frontend=["--graceful-timeout", "2"]) as stack, \
            socket.create_connection(("127.0.0.1", stack.frontend.port)) as sock:
        sock.sendall(b"POST /generate HTTP/1.1\r\nhost: 127.0.0.1\r\n"
                     b"content-type: application/json\r\ncontent-length: %d\r\n\r\n"
                     % len(body) + body)
        stack.wait_inflight(lambda snap: snap["inflight"] == 1)
        stack.frontend.process.send_signal(signal.SIGTERM)
        stack.frontend.process.wait(timeout=30)
        lines = stack.frontend.lines()
    start = next(x for x in lines if x.get("event") == "request.start"
                 and x.get("path") == "/generate")
    errors = [x for x in lines if x["level"] == "ERROR" and "exception" in x]
    assert errors, [x["message"] for x in lines][-10:]
    for line in errors:
        assert line["exception"].startswith("CancelledError"), line["exception"]
        assert line.get("request_id") == start["request_id"], line["message"]
        assert line.get("x_request_id") == "stops-reading"
        assert line.get("trace_id") == start["trace_id"]
