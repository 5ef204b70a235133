"""A raw asyncio TCP server on loopback, run in a thread of its own for a test's block:
for stand-ins speaking bytes a real server would not (a relay that counts connections,
a worker that never ends its body)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable, Iterator

from tests.support.servers import free_port

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.contextmanager
def loop_server(handle: Handler) -> Iterator[int]:
    """Serve `handle` on a free loopback port for the block; yields the port. At the
    block's end the connections still open are cancelled and the loop closed."""
    port = free_port()
    loop = asyncio.new_event_loop()
    started = threading.Event()
    stop = asyncio.Event()

    async def serve() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", port)
        started.set()
        async with server:
            await stop.wait()
        connections = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in connections:
            task.cancel()
        await asyncio.gather(*connections, return_exceptions=True)

    thread = threading.Thread(target=lambda: loop.run_until_complete(serve()), daemon=True)
    thread.start()
    assert started.wait(10)
    try:
        yield port
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()
