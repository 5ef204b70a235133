"""Dispatch to workers: round-robin over healthy ones, Conflict-aware retry.

A worker answering 409 Conflict already holds this ``request_id`` (a retry reached it
while the first attempt was still in flight): the request goes to another worker and
the refusing one stays in rotation. A connection failure, a 5xx, or a timeout before
the first NDJSON line marks that worker down for ``down_cooldown`` seconds and the
request goes elsewhere; nothing was delivered to the caller yet, so a retry is safe.
After the first line a failure is the caller's alone (see ``pump``).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx
import orjson

from ridtrace.frontend_plugin.settings import FrontendSettings
from ridtrace.frontend_plugin.wire import CLIENT_KEEP_ALIVE_SECONDS, WORK_PATH, WorkRequest
from ridtrace.tracing import metrics
from ridtrace.tracing.eventlog import EventLog

__all__ = ["WORKER_UNAUTHORIZED", "DispatchError", "Dispatcher", "WorkerPool", "WorkerStream"]

events = EventLog(__name__)

WORKER_UNAUTHORIZED = "worker_unauthorized"
"""Dispatch failure reason: a worker answered 401/403 to the frontend's worker token."""


class DispatchError(Exception):
    """No worker produced a first chunk; ``status`` is what the caller should get."""

    def __init__(self, message: str, *, reason: str, status: int, attempts: int) -> None:
        super().__init__(message)
        self.reason = reason
        self.status = status
        self.attempts = attempts


class WorkerPool:
    """Worker URLs, a round-robin cursor and per-worker down-until times."""

    def __init__(
        self, urls: tuple[str, ...], *, cooldown: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.urls = tuple(u.rstrip("/") for u in urls)
        self._cooldown = cooldown
        self._clock = clock
        self._down_until: dict[str, float] = {}
        self._next = 0

    def order(self) -> list[str]:
        """Workers to try: healthy ones from the cursor on, then those marked down."""
        if not self.urls:
            return []
        start = self._next % len(self.urls)
        self._next += 1
        rotated = self.urls[start:] + self.urls[:start]
        now = self._clock()
        up = [u for u in rotated if self._down_until.get(u, 0.0) <= now]
        # Down workers last, not never: if all are down, trying beats refusing.
        down = sorted((u for u in rotated if u not in up), key=lambda u: self._down_until[u])
        return up + down

    def mark_down(self, url: str) -> None:
        """Skip ``url`` while others are healthy, for the cooldown."""
        self._down_until[url] = self._clock() + self._cooldown

    def is_up(self, url: str) -> bool:
        """Whether ``url`` is in rotation now."""
        return self._down_until.get(url, 0.0) <= self._clock()

    def snapshot(self) -> list[dict[str, object]]:
        """Per-worker health, for the debug endpoint."""
        return [{"url": u, "up": self.is_up(u)} for u in self.urls]


class WorkerStream:
    """An open worker response whose first message has already arrived."""

    def __init__(
        self, *, worker: str, attempts: int, response: httpx.Response,
        messages: AsyncIterator[dict[str, Any]], first: dict[str, Any],
    ) -> None:
        self.worker = worker
        self.attempts = attempts
        self.first = first
        self._response = response
        self._messages = messages

    async def next_message(self, timeout: float) -> dict[str, Any] | None:
        """The next NDJSON message, ``None`` at end of stream; raises ``TimeoutError``."""
        with anyio.fail_after(max(timeout, 0.0)):
            return await anext(self._messages, None)

    async def aclose(self) -> None:
        """Close the worker connection (the worker sees its caller go away)."""
        await self._response.aclose()


class Dispatcher:
    """Sends work envelopes to workers and returns the first stream that starts."""

    def __init__(
        self, settings: FrontendSettings, *, client: httpx.AsyncClient | None = None
    ) -> None:
        self.settings = settings
        self.pool = WorkerPool(settings.workers, cooldown=settings.down_cooldown)
        self._client = client
        self._owns_client = client is None
        self._fixed_headers = {"content-type": "application/json"}
        if settings.worker_token:
            self._fixed_headers["authorization"] = "Bearer " + settings.worker_token

    def _http(self) -> httpx.AsyncClient:
        # Created lazily so it binds to the serving event loop, not the importing one.
        if self._client is None:
            s = self.settings
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(
                    connect=s.connect_timeout, read=None, write=s.connect_timeout, pool=None
                ),
                limits=httpx.Limits(
                    max_connections=s.max_connections,
                    max_keepalive_connections=s.max_connections,
                    keepalive_expiry=CLIENT_KEEP_ALIVE_SECONDS,
                ),
            )
        return self._client

    async def open(
        self,
        work: WorkRequest,
        *,
        trace_headers: dict[str, str] | None = None,
        deadline: float | None = None,
    ) -> WorkerStream:
        """Start ``work`` on some worker; retries per the module's rules.

        ``trace_headers`` (``traceparent`` and whatever else the propagators wrote) go
        with the envelope.

        Raises:
            DispatchError: every attempt failed (``reason`` of the last failure).
        """
        s = self.settings
        body = work.to_json()
        headers = {**(trace_headers or {}), **self._fixed_headers}
        end = deadline if deadline is not None else time.monotonic() + s.total_timeout
        candidates = self.pool.order()
        if not candidates:
            raise DispatchError("no workers configured", reason="no_worker", status=503, attempts=0)
        reason, message = "no_worker", "no worker available"
        attempt = 0
        for attempt, worker in enumerate(candidates[: max(s.max_attempts, 1)], start=1):
            events.debug(
                "dispatch.attempt", event="dispatch.attempt", worker=worker, attempt=attempt
            )
            budget = min(s.first_byte_timeout, end - time.monotonic())
            if budget <= 0:
                reason, message = "timeout", "request deadline passed before a worker answered"
                break
            try:
                stream = await self._try(worker, attempt, body, headers, budget)
            except _Refused as refusal:
                reason, message = refusal.reason, refusal.message
                marked_down = refusal.reason != "conflict"
                if not marked_down:
                    metrics.conflict_retry()
                if marked_down:
                    self.pool.mark_down(worker)
                events.warning(
                    "dispatch.retry", event="dispatch.retry", worker=worker, attempt=attempt,
                    reason=reason, marked_down=marked_down, error=message,
                )
                if refusal.fatal:
                    raise DispatchError(
                        message, reason=reason, status=502, attempts=attempt
                    ) from None
                continue
            return stream
        status = {"timeout": 504, "conflict": 503}.get(reason, 502)
        raise DispatchError(message, reason=reason, status=status, attempts=attempt)

    async def _try(
        self, worker: str, attempt: int, body: bytes, headers: dict[str, str], budget: float
    ) -> WorkerStream:
        client = self._http()
        request = client.build_request("POST", worker + WORK_PATH, content=body, headers=headers)
        response: httpx.Response | None = None
        try:
            with anyio.fail_after(budget):
                response = await client.send(request, stream=True)
                status = response.status_code
                if status != 200:
                    detail = (await response.aread())[:200].decode("utf-8", "replace")
                    await response.aclose()
                    if status == 409:
                        raise _Refused("conflict", f"worker refused duplicate id: {detail}")
                    if status in (401, 403):
                        # A token mismatch is configuration, not load: fail the request
                        # clearly instead of trying it on every worker.
                        raise _Refused(
                            WORKER_UNAUTHORIZED,
                            f"a worker refused the frontend's worker token (HTTP {status}); "
                            "check --worker-token on the frontend and its workers",
                            fatal=True,
                        )
                    if status >= 500:
                        raise _Refused("status_5xx", f"worker answered {status}")
                    raise _Refused("status_4xx", f"worker answered {status}: {detail}", fatal=True)
                messages = _ndjson(response)
                first = await anext(messages, None)
        except TimeoutError:
            if response is not None:
                await response.aclose()
            raise _Refused(
                "timeout", f"no first chunk from {worker} within {budget:.1f}s"
            ) from None
        except (httpx.TransportError, _BadLine) as exc:
            if response is not None:
                await response.aclose()
            raise _Refused("connect", f"{type(exc).__name__}: {exc}") from None
        if first is None:
            await response.aclose()
            raise _Refused("status_5xx", "worker closed the stream before the first chunk")
        return WorkerStream(
            worker=worker, attempts=attempt, response=response, messages=messages, first=first
        )

    def snapshot(self) -> dict[str, object]:
        """Worker health for the debug endpoint."""
        return {"workers": self.pool.snapshot()}

    async def aclose(self) -> None:
        """Close the connection pool (only if this dispatcher created it)."""
        if self._client is not None and self._owns_client:
            await self._client.aclose()
            self._client = None


class _Refused(Exception):
    def __init__(self, reason: str, message: str, *, fatal: bool = False) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.fatal = fatal


class _BadLine(Exception):
    """A worker line that is not a JSON object."""


async def _ndjson(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """Decode a worker's NDJSON body; splitting bytes ourselves beats aiter_lines."""
    buffer = b""
    async for data in response.aiter_bytes():
        buffer += data
        while True:
            cut = buffer.find(b"\n")
            if cut < 0:
                break
            line, buffer = buffer[:cut], buffer[cut + 1 :]
            if line.strip():
                yield _decode(line)
    if buffer.strip():
        yield _decode(buffer)


def _decode(line: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise _BadLine(f"invalid worker line: {exc}") from None
    if not isinstance(value, dict):
        raise _BadLine("worker line is not a JSON object")
    return value
