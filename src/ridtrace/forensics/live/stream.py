"""Follow a stream: standard input (``-``) or a pipe the user names (``<(kubectl logs -f
…)``). Read as it comes, whole lines handed out once, until its writer closes it.

A stream has no size, no end to start from and no rotation: it is read from its first
byte, without blocking (a poll that finds nothing waiting moves on), and when its
writer closes it, its last line is read even without a newline, as the batch read
reads one. A named pipe with no writer yet (``mkfifo``) is waited for: it ends once a writer
opened it and closed it. A plain stream only: compressed bytes are bad lines, counted.
Lines a shipper wrapped (``kubectl logs -f --timestamps``) are unwrapped as a file's are.
"""

from __future__ import annotations

import fcntl
import os
import termios
import time
from pathlib import Path

from ridtrace.forensics.live.chunk import Chunk
from ridtrace.forensics.live.identity import HEAD_READ, Identity, first_lines
from ridtrace.forensics.reading.lines import scan_lines
from ridtrace.forensics.reading.overlong import held_piece
from ridtrace.forensics.reading.unwrap import Unwrapper, cut_short, wrapper_of

# How long a stream must give nothing before it counts as caught up with its writer.
# ``kubectl logs -f`` writes the pod's history first, as fast as it can: a pipe found
# empty between two of its writes said "read to the end", so a request whose end was
# still in the backlog looked open and a back-to-back reuse of its id was reported as
# a duplicate in flight. A live service's stream is rarely quiet that long while busy,
# and while it is not, it is known up to its latest line, which is about now.
# A judgement a quiet stream could change waits this long, plus a poll and a parse: it
# stays under the live target of a finding 2 s after its line (docs/performance.md).
QUIET_S = 1.0


class StreamTail:
    """A followed stream, with the interface of `FileTail` that `Watch` uses."""

    gzip = False
    tear: str | None = None
    unsupported: str | None = None
    identity: Identity | None = None

    def __init__(self, fd: int, name: str, path: Path) -> None:
        os.set_blocking(fd, False)
        self._fd = fd
        self.name = name
        self.path = path
        self.line = 0
        self.done = False  # its writer closed it
        self.at_eof = False
        self._last_data = time.monotonic()  # when bytes last came
        self._held = b""
        self._budget: int | None = None  # bytes still to read once the follow stops
        # The last read stopped at its size limit, not at an empty pipe or the stop's bound.
        self.more_to_read = False
        # A named pipe (mkfifo) reads as ended until a writer opens it: wait for one.
        self._awaiting_writer = fd != 0
        # A shipper's wrapping (``kubectl logs -f --timestamps``), known from the first
        # whole lines, as a file's is.
        self._unwrap: Unwrapper | None = None
        self._sniffed = False

    @property
    def stream(self) -> str:
        """The stream's name in the per-file counters."""
        return self.name

    def bound(self) -> None:
        """Read what is in the pipe now, no more: a writer faster than the follower must
        not keep a stopped follow going."""
        waiting = bytearray(4)
        try:
            fcntl.ioctl(self._fd, termios.FIONREAD, waiting)
            self._budget = int.from_bytes(waiting, "little")
        except OSError:
            self._budget = 0

    @property
    def behind(self) -> bool:
        """Data came within the last second: a backlog may still be replaying."""
        return not self.at_eof

    def read(self, max_bytes: int) -> Chunk | None:
        """The whole lines that came since the last read (at most about `max_bytes`)."""
        if self.done:
            return None
        want = max_bytes if self._budget is None else min(max_bytes, self._budget)
        data = bytearray(self._held)
        self._held = b""
        while want > 0:
            try:
                got = os.read(self._fd, want)
            except BlockingIOError:
                break
            if not got:
                self.done = not self._awaiting_writer
                break
            self._awaiting_writer = False
            self._last_data = time.monotonic()
            data += got
            want -= len(got)
            if self._budget is not None:
                self._budget -= len(got)
        if self._budget is not None and self._budget <= 0 and data and not data.endswith(b"\n"):
            # Only a line the bound cut: with nothing held, the bound fell between lines
            # and what the pipe holds now was written after the stop.
            self._finish_line(data)
        self.more_to_read = want <= 0 and (self._budget is None or self._budget > 0)
        quiet = time.monotonic() - self._last_data >= QUIET_S
        self.at_eof = self.done or (want > 0 and quiet)
        if self.done and data.strip() and not data.endswith(b"\n"):
            data += b"\n"  # the writer closed it: its last line is a line
        cut = data.rfind(b"\n") + 1
        whole, self._held = memoryview(data)[:cut], held_piece(data, cut)
        if not whole:
            return None
        first = self.line + 1
        whole = self._unwrapped(whole)
        scan = scan_lines(whole)
        self.line += scan.newlines
        return Chunk(self.name, first, whole, scan, self.stream)

    def _unwrapped(self, whole: memoryview) -> memoryview:
        """The plain lines of the stream's whole lines, as many (`reading.unwrap`)."""
        if not self._sniffed:
            self._sniffed = True
            head = whole[:HEAD_READ].tobytes()
            # A first line longer (a collector's batch) is judged whole, as a file's is.
            self._unwrap = wrapper_of(first_lines(head if b"\n" in head else whole.tobytes()))
        if self._unwrap is None:
            return whole
        return memoryview(self._unwrap.feed(whole.tobytes()))

    def _finish_line(self, data: bytearray) -> None:
        """The stop's budget ended inside a line: read its rest, if it is there now (the
        bytes after its newline are dropped: the follow stops)."""
        try:
            more = os.read(self._fd, 1 << 20)
        except BlockingIOError:
            return
        end = more.find(b"\n")
        data += more if end < 0 else more[: end + 1]

    def flush_held(self) -> Chunk | None:
        """The held piece of a last line as a line of its own (the follow ends)."""
        held, self._held = self._held, b""
        self.at_eof = True
        if not held.strip():
            return None
        data = self._unwrapped(memoryview(held + b"\n"))
        scan = scan_lines(data)
        first = self.line + 1
        self.line += scan.newlines
        return Chunk(self.name, first, data, scan, self.stream)

    def left_unread(self) -> str | None:
        """Why a follow stopped at once left part of the stream unread, or None."""
        if self.done or self._budget == 0:
            return None
        return "stopped before its end (a stream still being written)"

    def unfinished(self) -> list[tuple[int, str]]:
        """(line, reason) of each wrapped record whose last part has not come (yet)."""
        if self._unwrap is None:
            return []
        reason = cut_short(self._unwrap)
        return [(line, reason) for line in self._unwrap.unfinished()]

    def torn_tail(self) -> bytes:
        """Nothing: a stream's last line is read when its writer closes it."""
        return b""

    def deleted(self) -> bool:
        """A stream has no name to lose; it ends when its writer closes it."""
        return False

    def close(self) -> None:
        """Release the descriptor (standard input is left open for the interpreter)."""
        if self._fd != 0:
            os.close(self._fd)
