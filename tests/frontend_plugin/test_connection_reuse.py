"""Concurrent requests reuse pooled worker connections instead of opening one each.

Before issue 15 nearly every request opened a new TCP connection to its worker: the
pump closed each worker response before reading its end, so the client dropped the
connection. A counting TCP relay between a real frontend and a real worker counts the
connections the frontend opens.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.frontend_plugin.conftest import _spawn
from tests.frontend_plugin.traffic import ROUTES, call
from tests.support.servers import free_port, stop_process, wait_until_serving

CONCURRENCY = 8
ROUNDS = 6


class CountingRelay:
    """A loopback TCP relay to ``target_port`` that counts accepted connections."""

    def __init__(self, target_port: int) -> None:
        self.port = free_port()
        self.accepted = 0
        self._target = target_port
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._relay, "127.0.0.1", self.port)
        )
        self._ready.set()
        self._loop.run_forever()
        server.close()
        self._loop.run_until_complete(server.wait_closed())

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._target)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            with contextlib.suppress(Exception):
                dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    @contextlib.contextmanager
    def running(self) -> Iterator[CountingRelay]:
        self._thread.start()
        assert self._ready.wait(10)
        try:
            yield self
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)


@contextlib.contextmanager
def _frontend_through_relay(workdir: Path) -> Iterator[tuple[str, CountingRelay]]:
    worker = _spawn(["worker"], workdir, "worker")
    try:
        wait_until_serving(worker.url, worker.process, timeout=60, path="/health")
        with CountingRelay(worker.port).running() as relay:
            frontend = _spawn(["frontend", "--worker", relay.url], workdir, "frontend")
            try:
                wait_until_serving(frontend.url, frontend.process, timeout=60, path="/health")
                yield frontend.url, relay
            finally:
                stop_process(frontend.process, grace=5)
    finally:
        stop_process(worker.process, grace=5)


def test_concurrent_requests_reuse_worker_connections(tmp_path: Path) -> None:
    async def traffic(base: str) -> None:
        limits = httpx.Limits(max_connections=CONCURRENCY)
        async with httpx.AsyncClient(timeout=30, limits=limits) as client:
            for round_no in range(ROUNDS):
                results = await asyncio.gather(*(
                    call(client, base, ROUTES[i % len(ROUTES)], f"reuse-{round_no}-{i}", None,
                         stream=bool(i % 2))
                    for i in range(CONCURRENCY)
                ))
                for result in results:
                    assert result.own, result

    with _frontend_through_relay(tmp_path) as (base, relay):
        asyncio.run(traffic(base))
        accepted = relay.accepted
    requests = CONCURRENCY * ROUNDS
    # At most one connection per concurrent request (plus slack for a connection the
    # pool replaced), not one per request.
    assert accepted <= CONCURRENCY + 2, f"{accepted} connections for {requests} requests"
