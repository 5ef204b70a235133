"""A server with `ridtrace serve`'s HTTP protocol whose app crashes mid-stream: 32 MiB
written, then an exception (``python tests/cli/crash_mid_stream_app.py PORT``); ``/``
answers a probe."""

from __future__ import annotations

import sys
from typing import Any

import uvicorn

from ridtrace.cli.header_guard import guarded_http_protocol

CHUNK, CHUNKS = 16 << 20, 2  # more than the kernel buffers: the rest waits in uvicorn


async def app(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/octet-stream")]})
    if scope["path"] == "/":
        await send({"type": "http.response.body", "body": b"up"})
        return
    for index in range(CHUNKS):
        await send({"type": "http.response.body", "body": bytes([65 + index]) * CHUNK,
                    "more_body": True})
    raise RuntimeError("crash mid-stream")


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="critical",
                http=guarded_http_protocol(header_timeout=10))
