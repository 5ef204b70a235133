"""The response pump: carries one worker stream into the caller's channel.

The pump links the worker's stream to a caller through ``registry.claim(key)``. Under
the safe policy that is always the caller that started it; under the legacy policy it
is whoever holds the key at that moment — the seed's crossed stream — or nobody, an
unlinked response. With chunk checks on, a chunk naming another request is never
forwarded: this caller's stream ends with an error and nobody else is touched.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Any

from ridtrace.contract import FOREIGN_CHUNK, RESPONSE_UNLINKED, UNLINKED_REQUEST, UNLINKED_RESPONSE
from ridtrace.frontend_plugin.dispatch import Dispatcher, DispatchError, WorkerStream
from ridtrace.frontend_plugin.failures import (
    FOREIGN_CHUNK_STOPPED,
    REQUEST_TIMED_OUT,
    WORKER_CONNECTION_LOST,
    WORKER_ERROR,
    WORKER_TIMED_OUT,
    Failed,
)
from ridtrace.frontend_plugin.redaction import redacted_url
from ridtrace.frontend_plugin.registry import Channel, InflightRegistry
from ridtrace.frontend_plugin.timers import Watchdog
from ridtrace.frontend_plugin.wire import WorkRequest
from ridtrace.tracing import metrics, validate_client_id
from ridtrace.tracing.eventlog import EventLog

__all__ = [
    "ENDED",
    "UNLINKED_REQUEST",
    "UNLINKED_RESPONSE",
    "Delta",
    "Failed",
    "Finished",
    "Linked",
    "drain",
    "ended",
    "lost",
    "message_item",
    "pump",
    "silent",
]

events = EventLog(__name__)



@dataclass(frozen=True, slots=True)
class Linked:
    """The stream started on ``worker`` after ``attempts`` dispatch attempts."""

    worker: str
    attempts: int


@dataclass(frozen=True, slots=True)
class Delta:
    """A piece of generated text."""

    text: str


@dataclass(frozen=True, slots=True)
class Finished:
    """The worker finished the reply."""

    finish_reason: str
    tokens: int
    prompt_tokens: int
    stop_sequence: str | None = None  # the stop sequence that ended the reply, if one did


async def pump(
    *,
    dispatcher: Dispatcher,
    registry: InflightRegistry,
    key: str,
    work: WorkRequest,
    channel: Channel,
    trace_headers: dict[str, str],
    deadline: float,
    check_ids: bool,
) -> None:
    """Dispatch ``work`` and deliver its stream to the caller that ``key`` links to."""
    stream: WorkerStream | None = None
    try:
        try:
            stream = await dispatcher.open(work, trace_headers=trace_headers, deadline=deadline)
        except DispatchError as exc:
            target = _link(registry, key, channel)
            if target is not None:
                target.put_nowait(Failed(str(exc), exc.status, exc.reason, exc.attempts,
                                         exc.detail))
            return
        target = _link(registry, key, channel)
        if target is None:
            return
        target.put_nowait(Linked(stream.worker, stream.attempts))
        await _forward(stream, target, work.request_id, deadline, check_ids, dispatcher)
    finally:
        if stream is not None:
            stream.close()  # synchronous: nothing a cancellation could interrupt


def _link(registry: InflightRegistry, key: str, channel: Channel) -> Channel | None:
    entry = registry.claim(key)
    if entry is None:
        if registry.policy == "legacy":
            events.error(UNLINKED_RESPONSE, event=RESPONSE_UNLINKED)
        return None  # safe policy: the caller already left; nothing to deliver
    if registry.policy == "safe" and entry.channel is not channel:
        return None  # unreachable with unique keys; never deliver to a stranger
    return entry.channel


async def _forward(
    stream: WorkerStream,
    target: Channel,
    request_id: str,
    deadline: float,
    check_ids: bool,
    dispatcher: Dispatcher,
) -> None:
    chunk_timeout = dispatcher.settings.chunk_timeout
    if deadline <= time.monotonic():
        total = dispatcher.settings.total_timeout
        target.put_nowait(overdue(stream.worker, total, stream.attempts))
        return
    watchdog = Watchdog(chunk_timeout, deadline)
    try:
        await _relay(stream, target, request_id, check_ids, watchdog)
    except asyncio.CancelledError:
        if watchdog.expired is None:
            raise  # the caller left: nothing to report to anyone
        # Our own timer: the cancellation ends here and the caller gets the timeout.
        watchdog.absorb()
        if watchdog.expired == "total":
            failed = overdue(stream.worker, dispatcher.settings.total_timeout, stream.attempts)
        else:
            failed = silent(stream.worker, chunk_timeout, stream.attempts)
        target.put_nowait(failed)
    finally:
        watchdog.stop()


def message_item(
    message: dict[str, Any], *, request_id: str, check_ids: bool, worker: str, attempts: int
) -> Delta | Finished | Failed | None:
    """What one worker message means for its caller; ``None`` for one that carries nothing.

    The per-chunk check lives here, for the pump and for callers that read their worker
    themselves (``direct``): a chunk naming another request is never forwarded.
    """
    if check_ids and message.get("request_id") != request_id:
        owner = message.get("request_id")
        metrics.foreign_chunk_refused()
        events.error(
            FOREIGN_CHUNK, event=FOREIGN_CHUNK, worker=redacted_url(worker),
            chunk_request_id=validate_client_id(owner) if isinstance(owner, str) else None,
        )
        return Failed(FOREIGN_CHUNK_STOPPED, 502, "foreign_chunk", attempts,
                      f"worker {redacted_url(worker)} sent a chunk for another request")
    text = message.get("text")
    if isinstance(text, str):
        return Delta(text)
    if message.get("done") is True:
        return Finished(
            finish_reason=str(message.get("finish_reason") or "stop"),
            tokens=_int(message.get("tokens")),
            prompt_tokens=_int(message.get("prompt_tokens")),
            stop_sequence=_str(message.get("stop_sequence")),
        )
    if "error" in message:
        return Failed(WORKER_ERROR, 502, "worker_error", attempts,
                      f"worker {redacted_url(worker)} error: {str(message['error'])[:200]}")
    return None


def lost(worker: str, exc: BaseException, attempts: int) -> Failed:
    """The failure of a stream whose worker connection broke after the first chunk."""
    return Failed(WORKER_CONNECTION_LOST, 502, "worker_lost", attempts,
                  f"worker {redacted_url(worker)} failed mid-stream: "
                  f"{type(exc).__name__}: {exc}")


def ended(worker: str, attempts: int) -> Failed:
    """The failure of a stream that ended before its done line."""
    return Failed(WORKER_CONNECTION_LOST, 502, "worker_lost", attempts,
                  f"worker {redacted_url(worker)}: {ENDED}")


def silent(worker: str, seconds: float, attempts: int) -> Failed:
    """The failure of a stream whose worker sent nothing for ``seconds`` (chunk timeout)."""
    return Failed(WORKER_TIMED_OUT, 504, "timeout", attempts,
                  f"worker {redacted_url(worker)} sent nothing for {seconds:.1f}s")


def overdue(worker: str | None, seconds: float, attempts: int) -> Failed:
    """The failure of a request with no complete answer within the total timeout."""
    where = f" (worker {redacted_url(worker)})" if worker else ""
    return Failed(REQUEST_TIMED_OUT, 504, "timeout", attempts,
                  f"no complete answer within the total timeout of {seconds:g}s{where}")


ENDED = "worker stream ended without completion"
"""What the log records for a stream that ended before its done line."""


async def _relay(
    stream: WorkerStream, target: Channel, request_id: str, check_ids: bool,
    watchdog: Watchdog,
) -> None:
    loop_time = asyncio.get_running_loop().time
    put = target.put_nowait
    message: dict[str, Any] | None = stream.first
    while message is not None:
        item = message_item(message, request_id=request_id, check_ids=check_ids,
                            worker=stream.worker, attempts=stream.attempts)
        if item is not None:
            put(item)
            if isinstance(item, Finished):
                # Reading the body's end hands the connection back to the pool; the end
                # nearly always came with the done line, so this rarely waits.
                await drain(stream)
                return
            if isinstance(item, Failed):
                return
        try:
            message = await stream.next_message()
        except Exception as exc:  # connection lost, bad line: this caller's failure only
            put(lost(stream.worker, exc, stream.attempts))
            return
        watchdog.last = loop_time()
    put(ended(stream.worker, stream.attempts))


async def drain(stream: WorkerStream) -> None:
    """Read past the done line to the body's end; a failure only costs the connection."""
    # Anything after the done line is a protocol slip: the connection is then dropped.
    with contextlib.suppress(Exception):
        await stream.drain()


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None
