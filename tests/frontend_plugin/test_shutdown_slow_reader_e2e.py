"""Slow clients still there when the server stops: what the log says of them."""

from __future__ import annotations

import json
import signal
import socket
from pathlib import Path

from tests.frontend_plugin.conftest import start_stack


def test_a_stream_whose_client_stopped_reading_ends_as_error_at_stop_not_cancelled(
    tmp_path: Path,
) -> None:
    # The stop's in-band error event cannot reach a client that stopped reading: the
    # writer sat in its write until uvicorn cancelled it at the end of the grace period,
    # and request.end said "cancelled" (status 200), which the stop promises never to
    # say (the client did not go away), beside a CancelledError traceback.
    words = " ".join(["w" * 100] * 8000)  # /generate: ~4 GB of cumulative events
    body = json.dumps({"text": words, "stream": True, "rid": "stops-reading",
                       "sampling_params": {"max_new_tokens": 8192}}).encode()
    with start_stack(tmp_path, workers=[[]], frontend=["--graceful-timeout", "3"]) as stack, \
            socket.create_connection(("127.0.0.1", stack.frontend.port)) as sock:
        sock.sendall(b"POST /generate HTTP/1.1\r\nhost: 127.0.0.1\r\n"
                     b"content-type: application/json\r\ncontent-length: %d\r\n\r\n"
                     % len(body) + body)
        stack.wait_inflight(lambda snap: snap["inflight"] == 1)
        stack.frontend.process.send_signal(signal.SIGTERM)
        stack.frontend.process.wait(timeout=30)
        lines = stack.frontend.lines()
    end = next(x for x in lines if x.get("event") == "request.end"
               and x.get("x_request_id") == "stops-reading")
    assert end["outcome"] == "error", end
    assert str(end["error"]).startswith("server shutting down"), end
    assert not [x for x in lines if "exception" in x], [x["message"] for x in lines][-10:]
