"""A worker line that never ends costs the frontend a bounded buffer, not its memory.

A worker (or a wrong worker URL serving a big download) that sent its first chunk and
then one line with no newline was buffered whole until the chunk timeout: 100 MiB a
request per few seconds, every network read copying the line again, and the request
ended as "sent nothing for 30.0s". It now ends at once as a broken stream.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from ridtrace.frontend_plugin.ndjson import MAX_LINE_BYTES, BadLine, NdjsonReader
from tests.frontend_plugin.conftest import start_stack


class _Reads:
    """A body read as it arrives: `pieces`, then endless ``a`` bytes if `endless`."""

    def __init__(self, *pieces: bytes, endless: bool = False) -> None:
        self.pieces, self.endless, self.given = list(pieces), endless, 0

    async def readany(self) -> bytes:
        data = self.pieces.pop(0) if self.pieces else (b"a" * 65536 if self.endless else b"")
        self.given += len(data)
        return data


def test_lines_split_across_reads_are_read_whole_and_an_endless_one_is_refused() -> None:
    async def read_all(source: _Reads) -> list[object]:
        reader, got = NdjsonReader(source), []
        while (message := await reader.next()) is not None:
            got.append(message)
        return got

    split = _Reads(b'{"a": 1}\n{"b"', b": 2", b"}\n", b'{"c": 3}')
    assert asyncio.run(read_all(split)) == [{"a": 1}, {"b": 2}, {"c": 3}]
    endless = _Reads(b'{"a": 1}\n', endless=True)
    with pytest.raises(BadLine, match="longer than"):
        asyncio.run(read_all(endless))
    assert endless.given <= MAX_LINE_BYTES + 2 * 65536


@pytest.fixture
def endless_worker() -> Iterator[str]:
    """A worker that answers a valid first chunk, then a line that never ends."""
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        length = 0
        while (line := await reader.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        envelope = orjson.loads(await reader.readexactly(length))
        first = orjson.dumps({"request_id": envelope["request_id"], "text": "echo:"}) + b"\n"
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\n"
                     b"transfer-encoding: chunked\r\n\r\n")
        writer.write(b"%x\r\n%s\r\n" % (len(first), first))
        piece = b"a" * 65536
        try:
            while not stop.is_set():
                writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def serve(ready: list[str], started: threading.Event) -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        ready.append(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")
        started.set()
        async with server:
            await stop.wait()

    ready: list[str] = []
    started = threading.Event()
    thread = threading.Thread(target=loop.run_until_complete, args=(serve(ready, started),))
    thread.start()
    started.wait(10)
    try:
        yield ready[0]
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()


def test_an_endless_worker_line_ends_the_stream_at_once(
    tmp_path: Path, endless_worker: str,
) -> None:
    env = {"RIDTRACE_FRONTEND_CHUNK_TIMEOUT": "20"}
    with start_stack(tmp_path, workers=[], frontend=["--worker", endless_worker],
                     env=env) as stack:
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        answer = httpx.post(stack.url + "/v1/chat/completions", json=body, timeout=60)
        request_id = answer.headers["x-server-request-id"]
        assert answer.status_code == 200 and '"error"' in answer.text
        end = stack.frontend.wait_for_event(request_id, "request.end")
        assert end["outcome"] == "error"
        assert "longer than" in str(end["error"]), end
        assert httpx.get(stack.url + "/health", timeout=10).status_code == 200
