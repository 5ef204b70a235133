"""A worker's answer once it has started: its NDJSON messages, then its connection's fate."""

from __future__ import annotations

from typing import Any

from ridtrace.frontend_plugin.ndjson import NdjsonReader
from ridtrace.frontend_plugin.timers import Deadline
from ridtrace.frontend_plugin.worker_connection import WorkerResponse


class WorkerStream:
    """An open worker response whose first message has already arrived."""

    __slots__ = ("_reader", "_response", "attempts", "first", "worker")

    def __init__(
        self, *, worker: str, attempts: int, response: WorkerResponse,
        reader: NdjsonReader, first: dict[str, Any],
    ) -> None:
        self.worker = worker
        self.attempts = attempts
        self.first = first
        self._response = response
        self._reader = reader

    async def next_message(self, timeout: float | None = None) -> dict[str, Any] | None:
        """The next NDJSON message, ``None`` at end of stream.

        The pump bounds silences with one watchdog per call, not a timer per chunk;
        ``timeout`` (raising ``TimeoutError``) is for callers without one.
        """
        if timeout is None:
            return await self._reader.next()
        with Deadline(timeout):
            return await self._reader.next()

    @property
    def ready(self) -> bool:
        """Whether the next message already arrived (:meth:`next_ready` will not wait)."""
        return self._reader.ready

    def next_ready(self) -> dict[str, Any]:
        """The next message that already arrived; raises ``BadLine`` (check :attr:`ready`)."""
        return self._reader.next_ready()

    async def drain(self) -> bool:
        """Read to the end of the body after the last message; ``True`` if nothing was left.

        A response read to its end hands its connection back to the pool; one closed
        early costs a new TCP connection on the next request.
        """
        return await self._reader.next() is None

    def close(self) -> None:
        """Return the connection to the pool if the body was read to its end, else drop it.

        Dropping it is how the worker sees its caller go away.
        """
        if self._reader.eof:
            self._response.release()
        else:
            self._response.close()

    async def aclose(self) -> None:
        """:meth:`close`, for ``async`` callers."""
        self.close()


def is_error_line(message: dict[str, Any], request_id: str) -> bool:
    """``message`` is the worker's error line for ``request_id``: no token, no end.

    As a first line it means the worker gave up before producing anything (it is
    stopping, its engine failed). One naming another request is left to the chunk
    check, which refuses it loudly.
    """
    return (
        "error" in message and "text" not in message and message.get("done") is not True
        and message.get("request_id") == request_id
    )
