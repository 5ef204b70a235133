"""How a stop signal ends `ridtrace analyze --follow`, also mid-write.

SIGINT, SIGTERM and SIGHUP end the loop between polls instead of killing it mid-read: the
first after the lines already written are read, a second one at once. (SIGHUP: the
terminal or ssh session closed; it stays ignored under nohup.)

A write to an output nobody reads (a hung alerting script, a `| less` left on its first
page) blocks once the pipe is full, and the handler alone cannot end it: Python retries
the interrupted write after the handler returns, so a stopped follower waited in it for
good, past a container's grace, until SIGKILL. Once stopped, a write gets `WRITE_GRACE_S`
(none after a second signal); then its descriptor is pointed at /dev/null, the retried
write returns, and `lost` names the output for the caller to report.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

from ridtrace.cli.stop import hangup_to_handle

WRITE_GRACE_S = 1.0
"""How long a stopped follower waits on a blocked write: a reader that is alive (a slow
terminal, a busy `jq`) takes a line well within it."""


class StopFlag:
    """The stop signals, turned into a flag the follow loop checks between polls."""

    def __init__(self, *, quiet: bool) -> None:
        self.signals = 0
        self.lost: str | None = None  # the output given up on, as its messages name it
        self._quiet = quiet
        self._old: dict[int, Any] = {}
        self._signalled = threading.Event()
        self._writing: tuple[int, str] | None = None  # descriptor and what is written
        self._armed = False

    def __enter__(self) -> StopFlag:
        stops = [int(signal.SIGINT), int(signal.SIGTERM)]
        hangup = hangup_to_handle()
        if hangup is not None:
            stops.append(hangup)
        for sig in stops:
            self._old[sig] = signal.signal(sig, self._handle)
        self._old[int(signal.SIGALRM)] = signal.signal(signal.SIGALRM, self._give_up_write)
        return self

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.signals += 1
        self._signalled.set()
        if self._writing is not None:
            if self.signals > 1:
                self._drop_output()
            else:
                self._arm()
        if self.signals == 1 and not self._quiet:
            # os.write: a handler may run while click is writing to stderr.
            with contextlib.suppress(OSError):
                os.write(2, b"ridtrace: stopping: reading the lines already written "
                            b"(again to stop at once)\n")

    def _arm(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, WRITE_GRACE_S)
        self._armed = True

    def _give_up_write(self, signum: int, frame: FrameType | None) -> None:
        if self._writing is not None:
            self._drop_output()

    def _drop_output(self) -> None:
        assert self._writing is not None
        fd, what = self._writing
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, fd)  # the interrupted write, retried, now returns
        finally:
            os.close(null)
        self.lost = self.lost or what

    @contextlib.contextmanager
    def writing(self, fd: int, what: str) -> Iterator[None]:
        """A write of `what` to `fd` that a stop may give up on (see the module)."""
        self._writing = (fd, what)
        if self.signals:
            self._arm()
        try:
            yield
        finally:
            self._writing = None
            if self._armed:
                signal.setitimer(signal.ITIMER_REAL, 0)
                self._armed = False

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._old.items():
            signal.signal(sig, handler)

    def __call__(self) -> bool:
        return self.signals > 0

    def now(self) -> bool:
        """A second signal: stop without reading further."""
        return self.signals > 1

    def sleep(self, seconds: float) -> None:
        """The pause between idle polls, cut short by a signal: time.sleep goes on after
        the handler returns, so with --poll-interval 30s Ctrl-C or a container's SIGTERM
        waited up to 30 s, past a stop's usual 10 s grace, and the summary was lost."""
        self._signalled.wait(seconds)
