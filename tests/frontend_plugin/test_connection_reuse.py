"""Concurrent requests reuse pooled worker connections instead of opening one each.

Before issue 15 nearly every request opened a new TCP connection to its worker: the
pump closed each worker response before reading its end, so the client dropped the
connection. A counting TCP relay between a real frontend and a real worker counts the
connections the frontend opens.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.frontend_plugin.conftest import _spawn
from tests.frontend_plugin.traffic import ROUTES, call
from tests.support.loop_server import loop_server
from tests.support.servers import stop_process, wait_until_serving

CONCURRENCY = 8
ROUNDS = 6


class CountingRelay:
    """A loopback TCP relay to ``target_port`` that counts accepted connections."""

    def __init__(self, target_port: int) -> None:
        self.accepted = 0
        self._target = target_port

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
    def running(self) -> Iterator[str]:
        """Relay for the block; yields the relay's URL."""
        with loop_server(self._relay) as port:
            yield f"http://127.0.0.1:{port}"


@contextlib.contextmanager
def _frontend_through_relay(workdir: Path) -> Iterator[tuple[str, CountingRelay]]:
    worker = _spawn(["worker"], workdir, "worker")
    try:
        wait_until_serving(worker.url, worker.process, timeout=60, path="/health")
        relay = CountingRelay(worker.port)
        with relay.running() as relay_url:
            frontend = _spawn(["frontend", "--worker", relay_url], workdir, "frontend")
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
