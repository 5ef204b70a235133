"""Dispatch to workers: round-robin over healthy ones, Conflict-aware retry.

A worker answering 409 Conflict already holds this ``request_id`` (a retry reached it
while the first attempt was still in flight): the request goes to another worker and
the refusing one stays in rotation. A connection failure, a 5xx, a timeout before
the first NDJSON line, or a first line that is the worker's error line (it is stopping,
or its engine failed) marks that worker down for ``down_cooldown`` seconds and the
request goes elsewhere; nothing was delivered to the caller yet, so a retry is safe.
After the first chunk a failure is the caller's alone (see ``pump``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from ridtrace.contract import DISPATCH_ATTEMPT, DISPATCH_OVERLOADED, DISPATCH_RETRY
from ridtrace.frontend_plugin.failures import (
    FRONTEND_OVERLOADED,
    OVERLOADED,
    REQUEST_TIMED_OUT,
    WORKER_UNAUTHORIZED,
    WORKER_UNAVAILABLE,
    dispatch_message,
)
from ridtrace.frontend_plugin.ndjson import BadLine, NdjsonReader
from ridtrace.frontend_plugin.redaction import redacted_url
from ridtrace.frontend_plugin.settings import FrontendSettings
from ridtrace.frontend_plugin.timers import Deadline
from ridtrace.frontend_plugin.wire import WORK_PATH, WorkRequest
from ridtrace.frontend_plugin.worker_connection import (
    OutOfLocalResources,
    WorkerHttpError,
    WorkerRefusedConnection,
    WorkerResponse,
)
from ridtrace.frontend_plugin.worker_http import ConnectionPool
from ridtrace.frontend_plugin.worker_pool import WorkerPool
from ridtrace.frontend_plugin.worker_refusals import (
    ERROR_BODY_LIMIT,
    HEALTHY_REFUSALS,
    Refused,
    refusal_of,
)
from ridtrace.frontend_plugin.worker_stream import WorkerStream, is_error_line
from ridtrace.tracing import metrics
from ridtrace.tracing.eventlog import EventLog

__all__ = [
    "WORKER_UNAUTHORIZED",
    "DispatchError",
    "Dispatcher",
    "WorkerPool",
    "WorkerStream",
    "worker_headers",
]

events = EventLog(__name__)


class DispatchError(Exception):
    """No worker produced a first chunk; ``status`` is what the caller should get.

    The message is for the caller (one of :mod:`~ridtrace.frontend_plugin.failures`'
    phrases); ``detail`` names the last worker tried and what it did, for the log.
    """

    def __init__(
        self, message: str, *, reason: str, status: int, attempts: int, detail: str = ""
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.status = status
        self.attempts = attempts
        self.detail = detail or message


def worker_headers(trace_headers: dict[str, str] | None, *, token: str | None) -> dict[str, str]:
    """The headers of the frontend→worker hop (the one place they are built).

    `trace_headers` are what the propagators wrote (`ridtrace.frontend_plugin.hop`);
    `token` is the shared worker token, when one is configured.
    """
    headers = {**trace_headers} if trace_headers else {}
    headers["content-type"] = "application/json"
    if token:
        headers["authorization"] = "Bearer " + token
    return headers


class Dispatcher:
    """Sends work envelopes to workers and returns the first stream that starts.

    The HTTP client is :mod:`ridtrace.frontend_plugin.worker_http`: pooled keep-alive
    connections, requests written as one buffer, answers parsed by httptools. httpx's
    send path, then aiohttp's request machinery, were the largest part of the
    frontend's CPU per request (issue 15). Idle connections are dropped after
    ``CLIENT_KEEP_ALIVE_SECONDS``, well before ``ridtrace serve`` would close them.
    """

    def __init__(self, settings: FrontendSettings) -> None:
        self.settings = settings
        self.pool = WorkerPool(settings.workers, cooldown=settings.down_cooldown)
        self._connections: ConnectionPool | None = None

    def connections(self) -> ConnectionPool:
        """The connection pool (created on first use, on the serving event loop)."""
        if self._connections is None:
            s = self.settings
            self._connections = ConnectionPool(
                limit=s.max_connections, connect_timeout=s.connect_timeout
            )
        return self._connections

    async def open(
        self,
        work: WorkRequest,
        *,
        trace_headers: dict[str, str] | None = None,
        deadline: float | None = None,
        on_attempt: Callable[[str, int], None] | None = None,
    ) -> WorkerStream:
        """Start ``work`` on some worker; retries per the module's rules.

        ``trace_headers`` (``traceparent`` and whatever else the propagators wrote) go
        with the envelope. ``on_attempt(worker, attempt)`` is called as each attempt
        begins, so a caller that leaves mid-dispatch still knows where its request went.

        Raises:
            DispatchError: every attempt failed (``reason`` of the last failure).
        """
        s = self.settings
        body = work.to_json()
        headers = worker_headers(trace_headers, token=s.worker_token)
        end = deadline if deadline is not None else time.monotonic() + s.total_timeout
        candidates = self.pool.order()
        if not candidates:
            raise DispatchError(WORKER_UNAVAILABLE, reason="no_worker", status=503, attempts=0,
                                detail="no workers configured")
        reason, detail = "no_worker", "no worker available"
        caller_message = WORKER_UNAVAILABLE
        attempt = 0
        # Attempts that reached a worker, or spent time on one. A worker whose host
        # refused the connection costs none: nothing was sent, and at a cold start,
        # before any worker was known dead, three dead ones of five met first took a
        # request's every attempt (502) while two healthy workers were free.
        spent = 0
        for attempt, worker in enumerate(candidates, start=1):
            if spent >= max(s.max_attempts, 1):
                break
            events.debug(
                DISPATCH_ATTEMPT, event=DISPATCH_ATTEMPT, worker=redacted_url(worker),
                attempt=attempt,
            )
            if on_attempt is not None:
                on_attempt(worker, attempt)
            budget = min(s.first_byte_timeout, end - time.monotonic())
            if budget <= 0:
                reason, detail = "timeout", "request deadline passed before a worker answered"
                caller_message = REQUEST_TIMED_OUT
                break
            try:
                stream = await self._try(worker, attempt, body, headers, budget, end,
                                         work.request_id)
            except _Overdue as overdue:
                # The request's own deadline, not this worker's slowness: the caller is
                # told 'request timed out' and the worker stays in rotation.
                reason, detail = "timeout", str(overdue)
                caller_message = REQUEST_TIMED_OUT
                break
            except OutOfLocalResources as exc:
                # This process has no descriptor left for a connection: no worker was
                # asked, so none is marked down (that emptied the pool and /health), and
                # the next one would fail alike. The caller is told to come back (503).
                events.error(DISPATCH_OVERLOADED, event=DISPATCH_OVERLOADED,
                             worker=redacted_url(worker), attempt=attempt, error=str(exc))
                raise DispatchError(FRONTEND_OVERLOADED, reason=OVERLOADED, status=503,
                                    attempts=attempt, detail=str(exc)) from None
            except Refused as refusal:
                message = refusal.message
                # A Conflict says only that this worker holds the id: after a worker that
                # failed, the caller is told of that failure, not "every worker tried
                # already had this request id in flight" (503) when one was down.
                if refusal.reason != "conflict" or reason in ("no_worker", "conflict"):
                    reason = refusal.reason
                    detail = f"worker {redacted_url(worker)}: {message}"
                    caller_message = dispatch_message(reason)
                # A Conflict or another 4xx is about this request, not the worker's
                # health: marking it down would let one bad request take a healthy
                # worker (with one worker, the frontend's /health) out of rotation.
                marked_down = refusal.reason not in HEALTHY_REFUSALS
                # A worker already marked down (a suspect's probe, or last resort) that
                # refuses the token again says nothing new of this request: it goes on
                # to the next worker. Fatal there, each cooldown's probe of a worker
                # left on another token failed a caller while a healthy worker was free.
                fatal = refusal.fatal and not (
                    refusal.reason == WORKER_UNAUTHORIZED and self.pool.is_marked_down(worker))
                if refusal.reason == "conflict":
                    metrics.conflict_retry()
                if marked_down:
                    self.pool.mark_down(worker)
                events.warning(
                    DISPATCH_RETRY, event=DISPATCH_RETRY, worker=redacted_url(worker),
                    attempt=attempt,
                    reason=refusal.reason, marked_down=marked_down, error=message,
                )
                spent += not refusal.unreached
                if fatal:
                    raise DispatchError(
                        caller_message, reason=reason,
                        status=413 if reason == "status_413" else 502, attempts=attempt,
                        detail=detail,
                    ) from None
                continue
            # A worker marked down that answers now is back: tried last, it had served
            # its callers while /health still counted it out for the whole cooldown.
            self.pool.mark_up(worker)
            return stream
        status = {"timeout": 504, "conflict": 503}.get(reason, 502)
        raise DispatchError(caller_message, reason=reason, status=status, attempts=attempt,
                            detail=detail)

    async def _try(
        self, worker: str, attempt: int, body: bytes, headers: dict[str, str], budget: float,
        end: float, request_id: str,
    ) -> WorkerStream:
        connections = self.connections()
        # A full pool is the frontend's own queue: waiting for a connection is bounded
        # by the request's deadline, not by the worker's first-byte budget, so it never
        # marks a worker down that was not even asked (a burst over max_connections
        # took every healthy worker out of rotation).
        try:
            with Deadline(end - time.monotonic()):
                await connections.reserve()
        except TimeoutError:
            raise _Overdue(_QUEUED) from None
        budget = min(budget, end - time.monotonic())  # the wait took from the deadline
        if budget <= 0:
            connections.unreserve()
            raise _Overdue(_QUEUED)
        # A budget cut short by the request's deadline that runs out is that deadline's
        # doing: the worker still had first-byte time left, so it is not marked down.
        clipped = budget < self.settings.first_byte_timeout
        response: WorkerResponse | None = None
        try:
            with Deadline(budget):
                response = await connections.post(worker, WORK_PATH, body, headers,
                                                   reserved=True)
                status = response.status
                if status != 200:
                    # Read to its end, so the connection goes back to the pool (release()
                    # drops it otherwise), but not past a cap: a body that never ends held
                    # the request for its whole first-byte budget, kept in memory. One that
                    # the close ends is whole: the status said what the worker answered
                    # (a 409 so framed was a lost connection, the worker marked down).
                    detail = (await response.read(ERROR_BODY_LIMIT, to_close=True))[:200].decode(
                        "utf-8", "replace"
                    )
                    response.release()
                    raise refusal_of(status, detail)
                reader = NdjsonReader(response)
                first = await reader.next()
        except BadLine as exc:
            # A 200 that is no work stream (a proxy's HTML page): the worker was reached
            # and answered, which "connect" said it was not.
            assert response is not None  # a line is read from an answer
            response.close()
            raise Refused("bad_reply", f"{type(exc).__name__}: {exc}") from None
        except WorkerHttpError as exc:
            if response is not None:
                response.close()
            raise Refused("connect", f"{type(exc).__name__}: {exc}",
                          unreached=isinstance(exc, WorkerRefusedConnection)) from None
        except TimeoutError:
            if response is not None:
                response.close()
            if clipped:
                raise _Overdue(
                    f"worker {redacted_url(worker)}: no first chunk before the request's "
                    f"total timeout ({budget:.1f}s left)"
                ) from None
            raise Refused(
                "timeout", f"no first chunk within {budget:.1f}s"
            ) from None
        except asyncio.CancelledError:
            # The caller left mid-dispatch: drop the connection (the worker sees it go)
            # instead of leaving an unread response behind.
            if response is not None:
                response.close()
            raise
        if first is None:
            response.close()
            # A 200 that ends before its first line: no 5xx, yet as unhealthy a reply.
            raise Refused("closed_early", "worker closed the stream before the first chunk")
        if is_error_line(first, request_id):
            # The worker gave up before producing anything (it is stopping, its engine
            # failed): nothing reached the caller, so another worker may still answer.
            response.close()
            raise Refused(
                "worker_error", f"worker error before its first chunk: {str(first['error'])[:200]}"
            )
        return WorkerStream(
            worker=worker, attempts=attempt, response=response, reader=reader, first=first
        )

    def snapshot(self) -> dict[str, object]:
        """Worker health for the debug endpoint."""
        return {"workers": self.pool.snapshot()}

    async def aclose(self) -> None:
        """Close the pooled worker connections."""
        if self._connections is not None:
            await self._connections.aclose()
            self._connections = None


class _Overdue(Exception):
    """The request's deadline passed before a worker could answer (not the worker's
    fault: it waited for a connection, or had first-byte time left)."""


_QUEUED = "request deadline passed while waiting for a connection to a worker"
