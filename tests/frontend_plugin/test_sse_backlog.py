"""A reply that is ready at once goes out in writes that let other requests run between
them: a write to a client that reads fast never waits, and a ready item neither, so one
caller's backlog (a /generate reply repeating its text in every event) held the event
loop until it was all written: a /health probe waited 3 s behind 970 MB of events."""

from __future__ import annotations

import asyncio
import itertools
import time

from starlette.types import Message

from ridtrace.frontend_plugin.bodies import Parsed
from ridtrace.frontend_plugin.pump import Delta, Finished
from ridtrace.frontend_plugin.routes.base import Ids, Renderer
from ridtrace.frontend_plugin.routes.sse import stream_to_reader


class _Echo(Renderer):
    def delta(self, text: str) -> bytes:
        return text.encode()

    def finish(self, finished: Finished, text: str) -> bytes:
        return b"done"


class _ReadyCall:
    """Every item already there, as a worker's whole reply read at once."""

    def __init__(self, items: list[object]) -> None:
        self.items = items
        self.deadline = time.monotonic() + 60

    async def next(self) -> object:
        return self.items.pop(0)

    def next_nowait(self) -> object | None:
        return self.items.pop(0) if self.items else None


def test_a_backlog_of_large_events_lets_the_event_loop_run_between_writes() -> None:
    events = [Delta("x" * 70_000) for _ in range(20)]  # each over one write's 64 KiB
    call = _ReadyCall([*events[1:], Finished("stop", 20, 1)])
    turns = 0
    seen: list[int] = []

    async def send(message: Message) -> None:  # a client reading as fast as it can
        if message["type"] == "http.response.body":
            seen.append(turns)

    async def other_requests() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    async def run() -> None:
        others = asyncio.ensure_future(other_requests())
        await asyncio.sleep(0)
        parsed = Parsed(model="m", prompt="p", max_tokens=20, stream=True)
        await stream_to_reader(send, call, _Echo(parsed, Ids("r", "r")),  # type: ignore[arg-type]
                               events[0], total_timeout=60)
        others.cancel()

    asyncio.run(run())
    assert len(seen) == 21  # one write per event, then the end
    # The other task ran between every two writes, not only once they were all out.
    assert all(later > earlier for earlier, later in itertools.pairwise(seen))
