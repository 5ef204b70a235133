"""How a stop signal ends `ridtrace analyze --follow`, also mid-write.

SIGINT, SIGTERM and SIGHUP end the loop between polls instead of killing it mid-read: the
first after the lines already written are read, a second one at once. (SIGHUP: the
terminal or ssh session closed; it stays ignored under nohup.)

A write to an output nobody reads (a hung alerting script, a `| less` left on its first
page) blocks once the pipe is full, and the handler alone cannot end it: Python retries
the interrupted write after the handler returns, so a stopped follower waited in it for
good, past a container's grace, until SIGKILL. Once stopped, a write gets `WRITE_GRACE_S`
(`SECOND_GRACE_S` after a second signal); then its descriptor is pointed at /dev/null, the retried
write returns, and `lost` names the output for the caller to report.

The handler's own "stopping" line is such a write: with `2>&1 | script` stderr is the
very pipe stdout is stuck on, and that line, written in the handler, blocked there for
good. And an output given up on takes stdout or stderr with it when it is the same file:
its reader reads neither, so the summary or the closing error would block on it next.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

from ridtrace.cli.stop import hangup_to_handle, interrupt_is_ours

WRITE_GRACE_S = 1.0
"""How long a stopped follower waits on a blocked write: a reader that is alive (a slow
terminal, a busy `jq`) takes a line well within it."""
SECOND_GRACE_S = 0.2
"""How long, after a second signal, a write under way gets before it is given up on."""


class StopFlag:
    """The stop signals, turned into a flag the follow loop checks between polls."""

    def __init__(self, *, quiet: bool) -> None:
        self.signals = 0
        self.lost: str | None = None  # the output given up on, as its messages name it
        self._quiet = quiet
        self._old: dict[int, Any] = {}
        self._signalled = threading.Event()
        # The writes in progress, innermost (the one blocked) last: descriptor and what is
        # written, None for the stop notice, whose loss fails nothing (stderr's warnings).
        self._writes: list[tuple[int, str | None]] = []
        self._dropped: set[int] = set()  # descriptors pointed at /dev/null
        self._armed = False
        # Whether Ctrl-C stops the follow, said on its start line: asked after the flag
        # set its own handler, the question always found another's and named SIGTERM.
        self.takes_interrupt = False

    def __enter__(self) -> StopFlag:
        stops = [int(signal.SIGTERM)]
        # An ignored SIGINT (a background job of a shell without job control) stays
        # ignored, and an embedding program's handler stays its own, as in the batch read
        # and as an ignored SIGHUP stays: a Ctrl-C meant for a script's foreground step
        # stopped the follower the script had started.
        self.takes_interrupt = interrupt_is_ours()
        if self.takes_interrupt:
            stops.append(int(signal.SIGINT))
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
        if self.signals > 1:
            # A write under way is most often one a reader takes at once (a file, a
            # terminal, a live pipe): given up on at the signal, the summary and the exit
            # status were lost to a run that had stopped well. A blocked one is given
            # up on after a moment.
            if self._writes:
                self._arm(SECOND_GRACE_S)
        elif self._writes:
            self._arm()
        if self.signals == 1 and not self._quiet:
            # os.write: a handler may run while click is writing to stderr. A write the
            # stop may give up on: stderr can be a pipe nobody reads (`2>&1 | script`).
            with self.writing(2, None), contextlib.suppress(OSError):
                os.write(2, b"ridtrace: stopping: reading the lines already written "
                            b"(again to stop at once)\n")

    def _arm(self, seconds: float = WRITE_GRACE_S) -> None:
        """Give the writes under way `seconds` (shortening a longer grace set before)."""
        if not self._armed or seconds < WRITE_GRACE_S:
            signal.setitimer(signal.ITIMER_REAL, seconds)
            self._armed = True

    def _give_up_write(self, signum: int, frame: FrameType | None) -> None:
        self._armed = False
        if not self._writes:
            return
        fd, what = self._writes[-1]  # the one this thread is blocked in
        self._drop_output(fd, what)
        if len(self._writes) > 1:  # the write the handler interrupted gets its grace too
            self._arm(SECOND_GRACE_S if self.signals > 1 else WRITE_GRACE_S)

    def _drop_output(self, fd: int, what: str | None) -> None:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            for target in _same_file(fd):
                os.dup2(null, target)  # the interrupted write, retried, now returns
                self._dropped.add(target)
        finally:
            os.close(null)
        if what is not None:
            self.lost = self.lost or what

    @contextlib.contextmanager
    def writing(self, fd: int, what: str | None) -> Iterator[None]:
        """A write of `what` to `fd` that a stop may give up on (see the module); `what`
        None: a notice, whose loss does not fail the run."""
        if fd in self._dropped and what is not None:
            self.lost = self.lost or what  # to /dev/null: its reader already read nothing
        self._writes.append((fd, what))
        if self.signals:
            self._arm(SECOND_GRACE_S if self.signals > 1 else WRITE_GRACE_S)
        try:
            yield
        finally:
            self._writes.pop()
            if not self._writes and self._armed:
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
        waited up to 30 s, past a stop's usual 10 s grace, and the summary was lost.
        A pause longer than the wait can take (`threading.TIMEOUT_MAX`, some 292 years)
        is that: ``--poll-interval 99999999999h`` was an OverflowError, exit 4."""
        self._signalled.wait(min(seconds, threading.TIMEOUT_MAX))


def _same_file(fd: int) -> list[int]:
    """`fd`, with stdout and stderr when they are the same file (`2>&1`, one terminal)."""
    def identity(descriptor: int) -> tuple[int, int] | None:
        try:
            status = os.fstat(descriptor)
        except OSError:  # closed (`2>&-`)
            return None
        return status.st_dev, status.st_ino

    own = identity(fd)
    return [fd] + [other for other in (1, 2)
                   if other != fd and own is not None and identity(other) == own]
