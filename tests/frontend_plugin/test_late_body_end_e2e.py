"""A worker that sends its done line but ends its chunked body late does not hold the
caller's reply.

Behind a proxy, or with another worker implementation, the done line can come before
the body's last chunk. The frontend waited for that end (to hand the connection back to
its pool) for up to the whole chunk timeout before sending the caller its last event and
``[DONE]``, and held the request's id in flight meanwhile: 30 s by default.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path

import httpx

from tests.frontend_plugin.conftest import _spawn
from tests.support.loop_server import loop_server
from tests.support.servers import stop_process, wait_until_serving

CHUNK_TIMEOUT = 20  # s: what the reply was held for


async def _done_but_not_ended(reader: asyncio.StreamReader,
                              writer: asyncio.StreamWriter) -> None:
    """A worker: 200, chunked NDJSON for the envelope's request_id, the done line, and
    then never the body's last chunk while the connection stays open."""
    with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        request_id = json.loads(await reader.readexactly(length))["request_id"]
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\n"
                     b"transfer-encoding: chunked\r\n\r\n")
        for item in ({"text": "echo:"}, {"text": " hi"},
                     {"done": True, "finish_reason": "stop", "tokens": 2, "prompt_tokens": 1}):
            line = (json.dumps({"request_id": request_id, **item}) + "\n").encode()
            writer.write(b"%x\r\n%s\r\n" % (len(line), line))
        await writer.drain()
        await reader.read()  # until the frontend gives the connection up
    writer.close()


def test_the_reply_is_sent_once_its_done_line_arrives(tmp_path: Path) -> None:
    with loop_server(_done_but_not_ended) as worker_port:
        frontend = _spawn(["frontend", "--worker", f"http://127.0.0.1:{worker_port}",
                           "--chunk-timeout", str(CHUNK_TIMEOUT)], tmp_path, "frontend")
        try:
            wait_until_serving(frontend.url, frontend.process, timeout=60, path="/health")
            with httpx.Client(timeout=60) as client:
                for stream in (True, False):
                    began = time.monotonic()
                    answer = client.post(frontend.url + "/v1/chat/completions", json={
                        "model": "echo", "stream": stream,
                        "messages": [{"role": "user", "content": "hi"}]})
                    took = time.monotonic() - began
                    assert answer.status_code == 200, answer.text
                    if stream:
                        assert answer.text.rstrip().endswith("data: [DONE]"), answer.text
                    else:
                        assert answer.json()["choices"][0]["message"]["content"] == "echo: hi"
                    # Far below the chunk timeout it was held for, whatever the load.
                    assert took < CHUNK_TIMEOUT / 2, (stream, took)
        finally:
            stop_process(frontend.process, grace=5)
