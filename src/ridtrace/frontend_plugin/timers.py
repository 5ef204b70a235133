"""Timeouts that cost one loop timer, not a cancel scope or a task per wait (issue 15).

anyio's ``fail_after`` per first chunk and per chunk was a tenth of the frontend's CPU
per request; these do the same with a ``TimerHandle`` and ``Task.cancel``.
"""

from __future__ import annotations

import asyncio
import time
from types import TracebackType

__all__ = ["Deadline", "Watchdog"]


def _own_task() -> asyncio.Task[object]:
    task = asyncio.current_task()
    if task is None:
        raise RuntimeError("timers need a running task")
    return task


def _uncancel(task: asyncio.Task[object]) -> None:
    uncancel = getattr(task, "uncancel", None)  # Python 3.11+
    if uncancel is not None:
        uncancel()


class Deadline:
    """``with Deadline(seconds):`` raises ``TimeoutError`` if the block outlives it."""

    __slots__ = ("_expired", "_handle", "_seconds", "_task")

    def __init__(self, seconds: float) -> None:
        self._seconds = max(seconds, 0.0)
        self._expired = False

    def __enter__(self) -> Deadline:
        self._task = _own_task()
        self._handle = asyncio.get_running_loop().call_later(self._seconds, self._expire)
        return self

    def _expire(self) -> None:
        self._expired = True
        self._task.cancel()

    def shorten(self, seconds: float) -> None:
        """Expire within ``seconds`` from now, if that is sooner (inside the block)."""
        loop = asyncio.get_running_loop()
        due = loop.time() + max(seconds, 0.0)
        if not self._expired and due < self._handle.when():
            self._handle.cancel()
            self._handle = loop.call_at(due, self._expire)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._handle.cancel()
        # Any exception after expiry is ours: a library may turn the cancellation into
        # an error of its own on the way out.
        if self._expired and kind is not None:
            _uncancel(self._task)
            raise TimeoutError from exc


class Watchdog:
    """The chunk and total timeouts of one stream, as one timer per call.

    Each chunk only records the loop time in :attr:`last`; the timer, when it fires,
    either re-arms for the next possible expiry or cancels the task and sets
    :attr:`expired` (``"chunk"`` or ``"total"``).
    """

    __slots__ = ("_chunk", "_deadline", "_handle", "_loop", "_task", "expired", "last")

    def __init__(self, chunk_timeout: float, deadline: float) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = _own_task()
        self._chunk = chunk_timeout
        now = self._loop.time()
        # `deadline` is on time.monotonic(); the loop's clock may have another origin.
        self._deadline = now + (deadline - time.monotonic())
        self.last = now
        self.expired: str | None = None
        self._handle = self._loop.call_at(self._due(), self._check)

    def _due(self) -> float:
        return min(self.last + self._chunk, self._deadline)

    def _check(self) -> None:
        now = self._loop.time()
        if now < self._due():
            self._handle = self._loop.call_at(self._due(), self._check)
            return
        self.expired = "total" if now >= self._deadline else "chunk"
        self._task.cancel()

    def absorb(self) -> None:
        """Our own cancellation ends here (the caller is told about the timeout)."""
        _uncancel(self._task)

    def stop(self) -> None:
        """Disarm (the stream ended)."""
        self._handle.cancel()
