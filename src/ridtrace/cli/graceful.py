"""uvicorn with a shutdown that ends the requests it cannot wait for through the app.

On SIGTERM or SIGINT (and here SIGHUP) uvicorn closes its listener, closes idle
keep-alive connections, tells busy ones to close after their response, and waits up to
its graceful-shutdown timeout for in-flight requests. Whatever is still running then is
cancelled, which looks to a client like a crash (plain 500, or a stream cut mid-chunk)
and to the logs like a client that left. :class:`DrainingServer` asks the app's
:class:`Drain` to end those requests itself a little before the timeout, so every
caller gets an answer in its API's shape and every ``request.end`` says ``error``, and
it exits 0 once done.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType

import uvicorn

from ridtrace.cli.stop import hangup_to_handle, quit_to_handle, received_stop_signal
from ridtrace.contract import SHUTDOWN_DRAIN, SHUTDOWN_STOP
from ridtrace.frontend_plugin.drain import Drain
from ridtrace.tracing.eventlog import EventLog

__all__ = ["DrainingServer", "bound_any_port", "stop_margin"]

events = EventLog(__name__)


# How long a forced exit (Ctrl-C twice) waits for the requests it ended to be answered.
FORCED_STOP_WAIT = 0.5


def stop_margin(graceful_timeout: float) -> float:
    """How long before the end of the grace period in-flight requests are ended.

    Enough for the app to write its error answers and for uvicorn (which polls every
    0.1 s) to see the connections close; a fifth of a short grace period, so a test's
    two seconds still leave most of the time for requests to finish on their own.
    """
    return min(2.0, graceful_timeout / 5)


def bound_any_port(host: str) -> socket.socket | None:
    """A socket bound to a free port of ``host`` (``--port 0``), for uvicorn to serve on.

    Bound before the app is set up so the process is named after the port it got: named
    from ``--port`` itself, every worker started with ``--port 0`` was ``worker-0`` in
    Jaeger and in its lines. ``None`` when ``host`` cannot be bound here: uvicorn then
    tries, and reports the failure as for any other port.
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError:
        return None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:  # as asyncio binds a host: IPv6 alone
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
    except OSError:
        sock.close()
        return None
    return sock


class DrainingServer(uvicorn.Server):
    """A uvicorn server that calls ``drain.stop_all()`` shortly before its
    ``timeout_graceful_shutdown`` runs out (see the module docstring)."""

    def __init__(
        self,
        config: uvicorn.Config,
        *,
        drain: Drain,
        on_started: Callable[[list[tuple[str, int]]], None] | None = None,
    ) -> None:
        super().__init__(config)
        self.drain = drain
        self.on_started = on_started
        self._loop: asyncio.AbstractEventLoop | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().startup(sockets)
        if self.started and sockets is not None:
            # uvicorn logs where it listens only for sockets it bound itself (given
            # sockets mean its worker processes, whose parent said so): a --port 0
            # worker's log lacked its "Uvicorn running on" line.
            self._log_started_message(sockets)
        if self.started and self.on_started is not None:
            # The addresses actually bound (port 0 picks one), once the app is ready.
            self.on_started(
                [s.getsockname()[:2] for server in self.servers for s in server.sockets]
            )

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        grace = self.config.timeout_graceful_shutdown
        timer: asyncio.TimerHandle | None = None
        if grace is not None:
            events.info(
                SHUTDOWN_DRAIN, event=SHUTDOWN_DRAIN, inflight=len(self.drain),
                graceful_timeout=grace,
            )
            self.drain.write_grace = stop_margin(grace) / 2
            timer = asyncio.get_running_loop().call_later(
                grace - stop_margin(grace), self._stop_inflight
            )
        try:
            await super().shutdown(sockets)
            if self.force_exit:
                await self._forced_answers_written()
        finally:
            if timer is not None:
                timer.cancel()

    async def _forced_answers_written(self) -> None:
        """Give the requests a forced exit ended (`handle_exit`) up to
        `FORCED_STOP_WAIT` to write their answers; the loop's end cancels what is left."""
        deadline = time.monotonic() + FORCED_STOP_WAIT
        while len(self.drain) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    def _stop_forced(self) -> None:
        self.drain.write_grace = FORCED_STOP_WAIT / 2
        self._stop_inflight()

    def _stop_inflight(self) -> None:
        count = self.drain.stop_all()
        if count:
            events.warning(SHUTDOWN_STOP, event=SHUTDOWN_STOP, requests=count)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """uvicorn's SIGINT and SIGTERM, and SIGHUP and SIGQUIT the same way.

        A terminal or ssh session closed under ``ridtrace serve`` killed it where it
        stood, every span and metric not yet exported lost and the gathered log lines
        with them; so did SIGQUIT, the stop signal of images and supervisors set up the
        nginx way (``STOPSIGNAL SIGQUIT``, supervisord's ``stopsignal=QUIT``), whose
        default action dumps core with nothing flushed.
        """
        with super().capture_signals():
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            # None when ignored (SIGHUP under nohup): keep running.
            stops = [sig for sig in (hangup_to_handle(), quit_to_handle()) if sig is not None]
            previous = {sig: signal.signal(sig, self.handle_exit) for sig in stops}
            # A stop that came while the server started, inside an import, is sent again
            # a moment later to the handler that took it (`stop.unwind`); these handlers
            # replaced it meanwhile, and it was dropped: the server ran on until killed
            # (1 start in 12 given SIGTERM 0.3-0.55 s after launch). Taken now instead.
            asked = received_stop_signal()
            if asked is not None:
                self.handle_exit(asked, None)
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        forced_before = self.force_exit
        super().handle_exit(sig, frame)
        if self.force_exit and not forced_before and self._loop is not None:
            # A second Ctrl-C: uvicorn stops waiting and cancels what still runs, which
            # cut each stream as a client that left would (`request.end` cancelled, the
            # span's status unset: the clients' act). Ended by the app at once instead,
            # each says `server shutting down`, outcome error, as at the grace period's
            # end. Scheduled: a signal handler may run in the middle of the loop's work.
            self._loop.call_soon_threadsafe(self._stop_forced)
        # uvicorn re-raises the caught signal after its shutdown, so the process dies of
        # it (status -15). Here the signal asked for exactly the stop that happened, and
        # everything was answered and flushed: exit 0 like any finished run.
        self._captured_signals.clear()
