"""Run a ``grpc.aio`` server until SIGTERM / SIGINT, then flush telemetry before exiting."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import Any

import grpc.aio

from ridtrace.tracing.grpc.status import cut_off_after
from ridtrace.tracing.lifecycle import service_ended, service_started

__all__ = ["serve_until_signalled"]


async def serve_until_signalled(
    server: grpc.aio.Server,
    *,
    grace: float | None = 5.0,
    signals: tuple[signal.Signals, ...] | None = None,
) -> None:
    """Start ``server``, wait for one of ``signals``, stop it gracefully, flush telemetry.

    ``signals`` defaults to SIGTERM, SIGINT, SIGHUP (a terminal or ssh session
    closing) and SIGQUIT (a supervisor's stop signal); not one that is ignored, as SIGHUP
    is under ``nohup``, where it must stay so.

    The stop lets calls in progress finish for up to ``grace`` seconds; then the tracer
    and meter providers ridtrace configured are shut down, so the spans and metrics of
    the last calls reach the collector before the process exits (a plain
    ``await server.wait_for_termination()`` ends on the signal's default action, and
    the batch still queued is lost). Also returns, the same way, if the server stops
    by itself.
    """
    if signals is None:
        signals = _default_signals()
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    installed: dict[signal.Signals, Any] = {}
    for signum in signals:
        previous = signal.getsignal(signum)
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not main thread
            loop.add_signal_handler(signum, _stop_and_pass_on, stop, signum, previous)
            installed[signum] = previous
    await server.start()
    service_started()
    terminated = asyncio.ensure_future(server.wait_for_termination())
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({terminated, stopping}, return_when=asyncio.FIRST_COMPLETED)
        # Calls still running when the grace period ends are cancelled by gRPC, their
        # clients told UNAVAILABLE: recorded so, not as the clients' cancels.
        cut_off_after(grace or 0.0)
        await server.stop(grace)
    finally:
        stopping.cancel()
        terminated.cancel()
        for signum, replaced in installed.items():
            loop.remove_signal_handler(signum)
            if replaced is not None:  # set from C, not Python: left as asyncio leaves it
                with contextlib.suppress(ValueError, TypeError, OSError):
                    signal.signal(signum, replaced)
        try:
            await service_ended()
        finally:
            cut_off_after(None)


def _stop_and_pass_on(stop: asyncio.Event, signum: signal.Signals, previous: object) -> None:
    """Stop the gRPC server, and pass the signal on to the handler it replaced: another
    server in the process (uvicorn's, which installs its own when it starts) never heard
    of it, and the process went on serving HTTP after gRPC had stopped."""
    stop.set()
    if callable(previous) and not _interrupts_main(previous):
        previous(signum, None)


def _interrupts_main(handler: object) -> bool:
    """Whether `handler` is Python's Ctrl-C, which the graceful stop replaces: the default
    one, or the one `asyncio.run` installs, which cancels the main task. Passed that one,
    Ctrl-C cancelled the very coroutine that was stopping the server: no grace for the
    calls in flight, their spans and counts lost, a KeyboardInterrupt traceback."""
    if handler is signal.default_int_handler:
        return True
    bound = getattr(handler, "func", None)  # asyncio.Runner's is a partial of its method
    return getattr(bound, "__func__", None) is getattr(asyncio.Runner, "_on_sigint", None)


def _default_signals() -> tuple[signal.Signals, ...]:
    # SIGHUP's default action killed the process where it stood, the spans and metrics
    # still batched lost with it; SIGQUIT's (a supervisor's stop signal set up the nginx
    # way) dumped core the same way. Neither is on Windows; an ignored one stays so.
    stops = (getattr(signal, name, None) for name in ("SIGHUP", "SIGQUIT"))
    return (signal.SIGTERM, signal.SIGINT, *(
        sig for sig in stops if sig is not None and signal.getsignal(sig) != signal.SIG_IGN))
