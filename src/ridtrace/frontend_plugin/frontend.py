"""Frontend state and one caller's in-flight call (register → pump → read → release)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from ridtrace.frontend_plugin.dispatch import Dispatcher
from ridtrace.frontend_plugin.drain import Drain
from ridtrace.frontend_plugin.failures import SHUTDOWN, Failed
from ridtrace.frontend_plugin.pump import Delta, Finished, Linked, overdue, pump
from ridtrace.frontend_plugin.registry import Dropped, InflightRegistry
from ridtrace.frontend_plugin.settings import FrontendSettings
from ridtrace.frontend_plugin.wire import WorkRequest
from ridtrace.tracing import metrics
from ridtrace.tracing.identity import DEFAULT_MAX_CLIENT_ID_LENGTH

__all__ = ["SHUTDOWN", "CallerLeft", "Frontend", "InferenceCall", "Item"]


@dataclass(frozen=True, slots=True)
class CallerLeft:
    """The caller disconnected before its answer was complete (see ``interrupt``)."""


CALLER_LEFT = CallerLeft()

Item = Delta | Finished | Failed | Dropped | CallerLeft
"""What a route handler reads from its call."""


class Frontend:
    """Everything one frontend shares across requests: settings, registry, dispatcher.

    Args:
        settings: frontend settings (workers, id policy, limits, timeouts).
        registry: an in-flight registry to use (tests inject one); a new one by default.
        dispatcher: a dispatcher to use; by default one over ``settings.workers``.
        drain: where in-flight calls are held so a shutdown can end them cleanly
            (``ridtrace serve`` passes the one its server stops); a new one by default.
        max_client_id_length: the longest client id a body may carry: the tracing
            settings' ``max_client_id_length``, which holds the header to it
            (`create_frontend_app` passes its own).
    """

    def __init__(
        self,
        settings: FrontendSettings | None = None,
        *,
        registry: InflightRegistry | None = None,
        dispatcher: Dispatcher | None = None,
        drain: Drain | None = None,
        max_client_id_length: int = DEFAULT_MAX_CLIENT_ID_LENGTH,
    ) -> None:
        self.settings = settings or FrontendSettings()
        self.max_client_id_length = max_client_id_length
        self.drain = drain if drain is not None else Drain()  # an empty one is falsy
        self.registry = registry or InflightRegistry(self.settings.id_policy)
        self.dispatcher = dispatcher or Dispatcher(self.settings)
        # Always under the safe policy (DESIGN: a foreign chunk is never forwarded);
        # the legacy policy never checks, as the pre-fix frontend did not. An off switch
        # (`check_chunk_ids`) let RIDTRACE_FRONTEND_CHECK_CHUNK_IDS=0 forward another
        # request's chunks with no line, metric or word at start-up.
        self.check_ids = self.registry.policy == "safe"
        metrics.declare_series("conflict_retries")
        metrics.declare_series("foreign_chunks_refused")
        # Legacy pumps outlive their caller (that is the bug being reproduced); hold
        # references so the event loop does not collect them mid-flight.
        self._detached: set[asyncio.Task[None]] = set()

    def snapshot(self) -> dict[str, object]:
        """Registry size and counters plus worker health (``GET /debug/inflight``)."""
        return {
            "policy": self.registry.policy,
            **self.registry.counters(),
            "detached_pumps": len(self._detached),
            **self.dispatcher.snapshot(),
        }

    def detach(self, task: asyncio.Task[None]) -> None:
        """Keep a pump running after its caller left (legacy policy only)."""
        self._detached.add(task)
        task.add_done_callback(self._detached.discard)

    async def aclose(self) -> None:
        """Stop detached pumps and close the worker connection pool."""
        for task in list(self._detached):
            task.cancel()
        if self._detached:
            await asyncio.gather(*self._detached, return_exceptions=True)
        await self.dispatcher.aclose()


class CallState:
    """What every call kind knows of its request: key, envelope, deadline, worker, tries."""

    __slots__ = ("_closed", "_frontend", "attempts", "deadline", "key", "trace_headers",
                 "work", "worker")

    def __init__(
        self, frontend: Frontend, *, key: str, work: WorkRequest,
        trace_headers: dict[str, str] | None = None,
    ) -> None:
        self._frontend = frontend
        self.key = key
        self.work = work
        self.trace_headers = trace_headers or {}
        self.deadline = time.monotonic() + frontend.settings.total_timeout
        self.worker: str | None = None
        self.attempts = 0
        self._closed = False


class InferenceCall(CallState):
    """One caller's request from registration to release, fed by a pump task.

    What the legacy policy needs: its pump outlives the caller and links to whoever
    holds the key (the seed's bug). The safe policy uses ``direct.DirectCall``.

    ``start`` registers the key (raising ``DuplicateRequestId`` under the safe policy)
    and starts the pump; ``close`` must run in ``finally`` whatever happened — it frees
    the key if it is still this caller's and stops the pump (safe policy).
    """

    __slots__ = ("_channel", "_task", "_timer")

    def __init__(
        self,
        frontend: Frontend,
        *,
        key: str,
        work: WorkRequest,
        trace_headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(frontend, key=key, work=work, trace_headers=trace_headers)
        self._channel: asyncio.Queue[Any] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None

    def start(self) -> None:
        """Register and dispatch; raises ``DuplicateRequestId`` with nothing started."""
        fe = self._frontend
        fe.registry.register(self.key, self._channel, owner_request_id=self.work.request_id)
        self._task = asyncio.create_task(
            pump(
                dispatcher=fe.dispatcher,
                registry=fe.registry,
                key=self.key,
                work=self.work,
                channel=self._channel,
                trace_headers=self.trace_headers,
                deadline=self.deadline,
                check_ids=fe.check_ids,
            )
        )
        # A safety net one second after the pump's own deadline, as a single timer per
        # call (not a wait_for per item): normally the pump reports the timeout itself;
        # this only fires for a pump that can no longer reach this caller (legacy).
        self._timer = asyncio.get_running_loop().call_later(
            fe.settings.total_timeout + 1.0,
            self._channel.put_nowait,
            overdue(None, fe.settings.total_timeout, 0),
        )

    async def next(self) -> Item:
        """The next item for this caller; a ``Failed`` timeout once the deadline passes."""
        while True:
            item = self._accept(await self._channel.get())
            if item is not None:
                return item

    def interrupt(self) -> None:
        """Wake the reader with :class:`CallerLeft` (its client disconnected).

        One watcher task per request calls this, instead of racing the read against
        the disconnect in two extra tasks (issue 15).
        """
        self._channel.put_nowait(CALLER_LEFT)

    def stop(self, message: str) -> None:
        """End the call with a 503 ``message`` (the server is stopping)."""
        self._channel.put_nowait(Failed(message, 503, SHUTDOWN, self.attempts))

    def next_nowait(self) -> Item | None:
        """The next item if one is already waiting, else ``None`` (batches one write)."""
        channel = self._channel
        while not channel.empty():
            item = self._accept(channel.get_nowait())
            if item is not None:
                return item
        return None

    def _accept(self, item: object) -> Item | None:
        if isinstance(item, Linked):
            self.worker, self.attempts = item.worker, item.attempts
            return None
        if isinstance(item, Failed) and item.attempts:
            self.attempts = item.attempts
        return item  # type: ignore[return-value]

    def close(self) -> None:
        """Release the key (if still ours) and stop or detach the pump. Idempotent."""
        if self._closed:
            return
        self._closed = True
        fe = self._frontend
        fe.registry.release(self.key, self._channel)
        if self._timer is not None:
            self._timer.cancel()
        task = self._task
        if task is None or task.done():
            return
        if fe.registry.policy == "safe":
            task.cancel()
        else:
            fe.detach(task)
