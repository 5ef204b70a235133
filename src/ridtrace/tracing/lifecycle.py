"""Nothing flushed late: the providers ridtrace built are shut down before the process exits.

``atexit`` is not enough. After its graceful shutdown uvicorn re-raises the signal it
caught under the default handler, so the process dies before ``atexit`` hooks run and
whatever a batch span processor or a periodic metric reader still holds is lost. The
shutdown therefore runs in the application's lifespan (:func:`telemetry_lifespan`,
built into ridtrace's own apps) and in the gRPC server helper, while the process is
still alive.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any, Protocol

__all__ = [
    "built_here",
    "flush_limit",
    "flush_telemetry",
    "in_service",
    "own",
    "owns_any",
    "requests_ended",
    "revive_telemetry",
    "running",
    "running_in_threads",
    "service_ended",
    "service_started",
    "shutdown_provider",
    "shutdown_telemetry",
    "shutdown_telemetry_async",
    "telemetry_lifespan",
]


class _Provider(Protocol):
    def shutdown(self) -> Any: ...


# How long shutdown waits for the spans of requests still ending (seconds): uvicorn
# cancels what outlived its graceful timeout right before the lifespan shutdown, and
# those requests end their spans a few loop turns later.
SPAN_WAIT_SECONDS = 2.0

# Seconds a flush may take past its exporter's timeout before shutdown goes on without it.
FLUSH_MARGIN_SECONDS = 1.0
# The SDK's own bound on a provider's shutdown (its batch processor and meter provider
# give up after 30 s): a timeout meant in milliseconds, as the specification has it
# (OTEL_EXPORTER_OTLP_TIMEOUT=10000), is read as seconds by the Python exporters and
# must not make a stop wait hours.
SDK_SHUTDOWN_SECONDS = 30.0

# With the seconds each one's flush may take (None: no exporter that can hang).
_owned: list[tuple[_Provider, float | None]] = []
# One object per HTTP request that has not ended yet, whether or not a span records it
# (its span, its count in ridtrace.requests and its request.end line all come at its
# end), and likewise one per gRPC call still running.
# set.add / set.discard are atomic under the GIL: transports on other threads are safe.
running: set[object] = set()
# The gRPC calls of synchronous servers among them: each ends in a thread of its
# server's pool, which a synchronous shutdown can wait for.
running_in_threads: set[object] = set()
# Every provider ridtrace built, shut down or not: a global one of these is ridtrace's
# own from an earlier call, any other global one is the application's.
_built: weakref.WeakSet[_Provider] = weakref.WeakSet()
_lock = threading.Lock()
# Servers serving in this process (`service_started`): the last to end shuts down.
_servers = 0
# Set while the middleware's own lifespan handling (`lifespan_scope`) runs the app's
# lifespan: it counts the server, so a `telemetry_lifespan` inside it counts nothing.
counted_above: ContextVar[bool] = ContextVar("ridtrace_lifespan_counted_above", default=False)
# Whether shutdown_telemetry is registered to run at interpreter exit (once).
_exit_hook: list[bool] = []
# How to serve again, per provider that can be: its exporters built anew.
_revivers: dict[int, Callable[[], None]] = {}
# The revivers of providers shut down, for the next lifespan's start (`revive_telemetry`).
_dormant: dict[int, Callable[[], None]] = {}


def own(
    provider: _Provider, *, flush_limit: float | None = None,
    revive: Callable[[], None] | None = None,
) -> None:
    """Register a provider ridtrace built, to be shut down by :func:`shutdown_telemetry`.

    ``flush_limit``: its exporter's timeout in seconds, when it has one that may wait on
    a collector; shutdown waits for the provider that long (and a margin), no longer.
    ``revive``: builds its exporters anew (and owns what it builds) when a lifespan
    starts again after the shutdown (:func:`revive_telemetry`).
    """
    with _lock:
        _dormant.pop(id(provider), None)  # serving again: not to be revived twice
        if revive is not None:
            _revivers[id(provider)] = revive
        if not _exit_hook:
            _exit_hook.append(True)
            # A process that never calls shutdown_telemetry (a script, a forced stop)
            # is flushed at exit with the same bound. The SDK's own exit hooks (turned
            # off on ridtrace's providers) shut them down one after the other, each
            # queued batch waiting its exporter's whole timeout on a hung collector.
            atexit.register(shutdown_telemetry)
        _owned.append((provider, flush_limit))
        _built.add(provider)


def built_here(provider: object) -> bool:
    """True if ridtrace built ``provider`` (see :func:`own`)."""
    with _lock:
        return provider in _built


def in_service(provider: object) -> bool:
    """True if ridtrace built ``provider`` and has not shut it down yet."""
    with _lock:
        return any(owned is provider for owned, _ in _owned)


def owns_any() -> bool:
    """True while a provider ridtrace built waits for :func:`shutdown_telemetry`."""
    with _lock:
        return bool(_owned)


def shutdown_telemetry() -> int:
    """Flush and shut down every tracer and meter provider ridtrace configured, and
    write the event lines its log sinks still hold.

    Spans still in a batch and metrics not yet exported are sent now. Idempotent: a
    provider is shut down once and then forgotten. Returns how many were shut down.
    Providers an application built itself are its own to shut down.
    """
    from ridtrace.tracing.sinks import flush_sinks

    # A synchronous gRPC server's wait_for_termination() returns once gRPC cancelled the
    # calls its stop cut off, while their handlers still unwind in its pool: their
    # spans and counts came after this flush, and were lost.
    deadline = time.monotonic() + SPAN_WAIT_SECONDS
    while running_in_threads and time.monotonic() < deadline:
        time.sleep(0.01)
    # Event lines gathered for the loop's next turn first: the process may die right
    # after this (uvicorn re-raises the signal it caught).
    flush_sinks()
    with _lock:
        owned = list(_owned)
        _owned.clear()
        for provider, _ in owned:
            if (revive := _revivers.pop(id(provider), None)) is not None:
                _dormant[id(provider)] = revive
    providers = [provider for provider, _ in owned]
    _shut_down_together(providers, _flush_bound(owned))
    if providers:
        from ridtrace.tracing import metrics

        if metrics.instruments() is not None and any(
            type(p).__name__ == "MeterProvider" for p in providers
        ):
            metrics.bind_meter_provider(None)
    return len(providers)


def revive_telemetry() -> int:
    """Serve again what :func:`shutdown_telemetry` shut down: new exporters for
    ridtrace's global providers. Returns how many were revived.

    Called when a lifespan starts. An app served twice in one process (two
    ``with TestClient(app)`` blocks, a test fixture per test, an in-process server
    restarted) was configured once, at import, and its first lifespan's end shut the
    global providers down for good: OpenTelemetry lets no other take their place, and
    every later span and metric was dropped without a word.
    """
    with _lock:
        waking = list(_dormant.values())
        _dormant.clear()
    for revive in waking:
        revive()
    return len(waking)


def shutdown_provider(provider: _Provider) -> None:
    """Flush and shut down one provider ridtrace built (see :func:`own`), with the bound
    :func:`shutdown_telemetry` keeps: its exporter's timeout and a margin at most.

    For a provider whose work ends before the process does (the demo's callers, one
    per run). Its own ``shutdown()`` exports what it holds one batch at a time, each
    batch waiting the exporter's whole timeout on a hung collector.
    """
    with _lock:
        owned = [entry for entry in _owned if entry[0] is provider]
        _owned[:] = [entry for entry in _owned if entry[0] is not provider]
    _shut_down_together([provider], _flush_bound(owned or [(provider, None)]))


def _flush_bound(owned: list[tuple[_Provider, float | None]]) -> float | None:
    """Seconds the flush of these providers may take; ``None`` (unbounded) when none
    has an exporter that could hang (console, Prometheus)."""
    limits = [limit for _, limit in owned if limit is not None]
    return flush_limit(max(limits)) if limits else None


def flush_limit(exporter_timeout: float) -> float:
    """Seconds a stop may spend flushing through exporters of ``exporter_timeout``
    seconds: that and a margin, and a margin short of the SDK's own shutdown bound.

    At the bound itself the SDK gave up first, and quietly: its batch processor's
    shutdown returned with the spans unsent, the thread was done by the deadline, and a
    collector that never answered lost every span of a stop with no line to say so.
    """
    return min(exporter_timeout + FLUSH_MARGIN_SECONDS,
               SDK_SHUTDOWN_SECONDS - FLUSH_MARGIN_SECONDS)


def flush_telemetry() -> None:
    """Export what ridtrace's providers hold, and write the event lines its sinks hold,
    without shutting anything down: a server that stops while others in the process
    still serve (`service_ended`). A stop signal ends the process right after it
    (uvicorn raises it again), and what was batched went with it."""
    from ridtrace.tracing.sinks import flush_sinks

    flush_sinks()
    with _lock:
        owned = list(_owned)
    _shut_down_together([provider for provider, _ in owned], _flush_bound(owned),
                        flush_only=True)


def _shut_down_together(
    providers: list[_Provider], limit: float | None, *, flush_only: bool = False,
) -> None:
    """Shut the providers down (`flush_only`: flush them) side by side, each on a thread
    of its own, for at most ``limit`` seconds.

    Each flush waits up to its exporter's timeout (10 s by default) on a slow or dead
    collector. One after the other, the tracer's and the meter's took ~20 s: past the
    5 s a 25 s drain leaves of Kubernetes' 30 s grace, so the pod was killed
    mid-flush. Side by side, shutdown takes the longest one. And the limit: a batch
    span processor exports what it holds one batch at a time, each batch waiting the
    whole timeout, so a backlog (a full queue is four batches) took 30 s. After the
    limit the flush is left to its daemon thread, which dies with the process: the
    collector could not take those spans anyway.
    """
    failures: list[BaseException] = []

    def shut_down(provider: _Provider) -> None:
        try:
            if flush_only:
                flush = getattr(provider, "force_flush", None)
                if flush is not None:
                    flush()
            else:
                provider.shutdown()
        except BaseException as exc:  # said below: telemetry never fails a stop
            failures.append(exc)

    threads = [threading.Thread(target=shut_down, args=(provider,), daemon=True,
                                name="ridtrace-telemetry-shutdown") for provider in providers]
    for thread in threads:
        thread.start()
    deadline = None if limit is None else time.monotonic() + limit
    for thread in threads:
        thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
    if any(thread.is_alive() for thread in threads):
        logging.getLogger(__name__).warning(
            "telemetry not flushed within %.1f s (the exporter's timeout and a margin, "
            f"{SDK_SHUTDOWN_SECONDS - FLUSH_MARGIN_SECONDS:.0f} s at most): "
            "the collector is slow or unreachable, what it did not take is dropped", limit,
        )
    for failure in list(failures):
        # A WARN, not the exception: raised into a server's lifespan, it was a traceback
        # and "Application shutdown failed" for what a slow collector does (the meter
        # provider's OTLP reader took the SDK's whole 30 s, and the Prometheus reader
        # after it failed "deadline already exceeded").
        text = "; ".join(line.strip() for line in str(failure).splitlines() if line.strip())
        logging.getLogger(__name__).warning(
            "telemetry shutdown failed, what it held may be lost: %s: %s",
            type(failure).__name__, text or "no detail")


async def shutdown_telemetry_async(*, span_wait: float = SPAN_WAIT_SECONDS) -> int:
    """:func:`shutdown_telemetry` in a thread: exports block, the event loop must not.

    First, for up to ``span_wait`` seconds, the requests still running on this loop
    may end: a span ended after its provider shut down is dropped, and a count added
    after the last metric export is never sent, so the requests a server cancelled
    just before its lifespan shutdown (uvicorn's ``timeout_graceful_shutdown``) were
    lost from every trace, and from the metrics when no span recorded them.
    """
    await requests_ended(span_wait)
    return await asyncio.to_thread(shutdown_telemetry)


async def requests_ended(wait: float = SPAN_WAIT_SECONDS) -> None:
    """Return once the requests running on this loop have ended, or after ``wait``
    seconds: those a server cancelled just before its lifespan shutdown unwind (and
    write their ``request.end``) a few loop turns later."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    while running and loop.time() < deadline:
        await asyncio.sleep(0.01)
    # One more turn: a server span an outer layer opened (FastAPI's telemetry) ends
    # as the same task unwinds past ridtrace's middleware.
    await asyncio.sleep(0)


def service_started() -> None:
    """A server in this process starts serving with ridtrace's telemetry (an app's
    lifespan, `serve_until_signalled`): what a previous one's end shut down serves
    again (`revive_telemetry`)."""
    global _servers
    with _lock:
        _servers += 1
    revive_telemetry()


async def service_ended() -> None:
    """A server started by `service_started` stopped: the last one to stop shuts
    telemetry down; another exports what the providers and log sinks hold.

    Several servers at once in one process (a public API and an admin port, an HTTP app
    beside a gRPC server) share the global providers: the first one's end shut them
    down under the others, whose every later span and metric was dropped ("Shutdown
    called, ignoring Span."). One that stops before the last exports what the providers
    hold, as a stop signal may end the process right after it (uvicorn raises it again
    once its server stopped: another server's thread never gets to stop).
    """
    global _servers
    with _lock:
        _servers = max(0, _servers - 1)
        last = _servers == 0
    if last:
        await shutdown_telemetry_async()
    else:
        await requests_ended()
        await asyncio.to_thread(flush_telemetry)


@asynccontextmanager
async def telemetry_lifespan(app: object = None) -> AsyncIterator[None]:
    """A Starlette / FastAPI lifespan that shuts telemetry down when the server stops
    (the last one, of several in one process: `service_ended`).

    One line in a user's app: ``FastAPI(lifespan=telemetry_lifespan)``. Inside a
    lifespan of its own: ``async with telemetry_lifespan(app): yield``.
    """
    if counted_above.get():
        # The middleware's lifespan handling around this app counts the server and
        # shuts telemetry down at its end, right after this one's: counted here too, the
        # first end was taken for another server's and flushed the exporters once more
        # (a second metrics export at every stop).
        yield
        return
    service_started()  # a second lifespan in this process (see revive_telemetry)
    try:
        yield
    finally:
        await service_ended()
