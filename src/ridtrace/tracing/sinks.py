"""The JSON-lines sink :func:`ridtrace.configure_logging` adds, and the event writer's list.

One sink takes loguru records (``write``) and ridtrace's own events (``write_event``,
without a loguru record) and writes both to one stream, in the order they were
written. Events written on an event loop's thread are gathered and written together at
the next turn of the loop: one ``write(2)`` for all the events of that turn instead of
one per line (a request's lifecycle lines are two or more). Loguru records, and events
anywhere else (another thread, no loop), are written at once, after whatever was
gathered: an application's own lines, and a server's last words before it re-raises a
signal, are never held. Gathered events are also written when the sink is removed,
when :func:`ridtrace.shutdown_telemetry` runs (the apps' lifespan) and at interpreter
exit, so a stopped server loses none of them (issue 14).

A write the stream refuses (a full disk, a file size limit, ``/dev/full``) loses its
lines, never the caller's work: the sink says so once on standard error, one line naming
where it writes, and again, with the count of lines lost, once a write gets through.
Raised, the error became loguru's multi-line report (a traceback) for every record and
one more line per batch of events.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import sys
import threading
import time
import weakref
from typing import IO, TYPE_CHECKING

from ridtrace.tracing.jsonline import event_head, pid

if TYPE_CHECKING:
    from loguru import Message

__all__ = [
    "JsonLinesSink",
    "event_sinks",
    "flush_sinks",
    "lowest_level",
    "register_event_sink",
    "replace_sinks_of",
    "unregister_event_sink",
]

# An event's head is cached per (level, message, logger, pid); messages are the log
# contract's few names, but a caller could vary them, so the cache stops growing here.
_MAX_HEADS = 512

# Seconds between two looks at whether a file sink's path still names the file written
# to (logrotate renamed it): one stat a second, not one per write.
ROTATION_CHECK_SECONDS = 1.0


class JsonLinesSink:
    """Writes JSON lines to a stream, gathered per turn of the event loop.

    Args:
        stream: where lines go.
        service: the ``service`` of every line.
        raw: ``stream`` is an unbuffered file the sink opened and owns: each write goes
            straight to ``write(2)`` and the sink closes it on ``stop``. Otherwise each
            write is followed by a flush, and the stream stays the caller's.
        levelno: the lowest level of the records loguru gives it (loguru filters them).
        event_levelno: the lowest level of ridtrace's events written (`levelno` unless
            lower).
        place: where the lines go, as the stderr line about a failing write names it
            (``log file logs/w.jsonl``, ``standard output``).
    """

    def __init__(
        self,
        stream: IO[bytes],
        service: str,
        *,
        raw: bool = False,
        levelno: int = 0,
        target: object = None,
        place: str = "the log",
        event_levelno: int | None = None,
    ) -> None:
        self._stream = stream
        self._place = place
        # Lines lost since the stream last refused a write, None while writes get through.
        self._lost: int | None = None
        # What configure_logging was given (a resolved path, or the stream), and the
        # loguru handler it added for this sink: a later call for the same target
        # removes it.
        self.target = target
        self.handler_id: int | None = None
        self._service = service
        self._raw = raw
        self.levelno = levelno
        self.event_levelno = levelno if event_levelno is None else min(levelno, event_levelno)
        self._heads: dict[tuple[str, str, str, int], bytes] = {}
        self._pending: list[bytes] = []
        # The loop a flush of _pending is scheduled on, if any.
        self._flush_loop: asyncio.AbstractEventLoop | None = None
        # Loguru's handler lock does not cover write_event: the sink needs its own.
        self._lock = threading.Lock()
        self._stopped = False
        self._torn = False  # the file ends with part of a line (a write failed mid-line)
        self._rotation_check_at = time.monotonic() + ROTATION_CHECK_SECONDS
        _all_sinks.add(self)
        _flush_at_exit()

    def write(self, message: Message) -> None:
        """Loguru's entry point: one formatted record."""
        from ridtrace.tracing.logs import format_record  # logs imports this module

        self._write(format_record(message.record, self._service), gather=False)

    def write_event(self, stamp: str, level: str, message: str, source: str, tail: bytes) -> None:
        """One event line: its time stamp, the head's parts and the encoded tail
        (:func:`ridtrace.tracing.jsonline.event_tail`)."""
        key = (level, message, source, pid())
        head = self._heads.get(key)
        if head is None:
            head = event_head(level, message, source, self._service)
            if len(self._heads) < _MAX_HEADS:
                self._heads[key] = head
        self._write(b'{"time":"' + stamp.encode("ascii") + head + tail, gather=True)

    def _write(self, data: bytes, *, gather: bool) -> None:
        loop = asyncio._get_running_loop() if gather else None
        with self._lock:
            if self._stopped:
                return
            if loop is not None and self._flush_loop in (None, loop):
                self._pending.append(data)
                if self._flush_loop is None:
                    self._flush_loop = loop
                    loop.call_soon(self._flush_soon)
                return
            # Whatever was gathered goes first: lines stay in the order they were written.
            if self._pending:
                data = b"".join((*self._pending, data))
                self._pending.clear()
            self._write_out(data)

    def _flush_soon(self) -> None:
        try:
            self.drain()
        except Exception as exc:  # a loop callback: nobody to raise to
            report_write_error(exc)

    def drain(self) -> None:
        """Write the gathered event lines now (not named flush: loguru would call that
        after each of its records)."""
        with self._lock:
            self._flush_loop = None
            if not self._pending or self._stopped:
                return
            data = b"".join(self._pending)
            self._pending.clear()
            self._write_out(data)

    def _write_out(self, data: bytes) -> None:  # under self._lock
        try:
            self._write_through(data)
        except OSError as exc:
            # Raised, it was a traceback on stderr per record (loguru's report) or a line
            # per batch of events; the server's requests must not notice either way.
            if self._lost is None:
                self._lost = 0
                _say(f"ridtrace: cannot write to {self._place}: {exc.strerror or exc}; "
                     "log lines are being lost")
            self._lost += max(data.count(b"\n"), 1)
            return
        if self._lost is not None:
            lost, self._lost = self._lost, None
            _say(f"ridtrace: writing to {self._place} again; "
                 f"{lost} log line{'s' if lost != 1 else ''} lost")

    def _write_through(self, data: bytes) -> None:  # under self._lock
        if self._raw and isinstance(self.target, str):
            now = time.monotonic()
            if now >= self._rotation_check_at:
                self._rotation_check_at = now + ROTATION_CHECK_SECONDS
                self._follow_rotation(self.target)
        stream = self._stream
        if self._raw:
            if self._torn:
                # A full disk (or a file size limit) cut the last write part way through
                # a line: appended to it, this record would be glued to half of that one,
                # one line that is no JSON. The torn line is ended first, alone.
                data = b"\n" + data
            torn = self._torn  # still, if not even the newline gets out
            try:
                written = stream.write(data)
                while written is not None and written < len(data):  # never half a line
                    torn = torn or written > 0
                    data = data[written:]
                    written = stream.write(data)
            except BaseException:
                self._torn = torn
                raise
            self._torn = False
        else:
            stream.write(data)
            stream.flush()

    def _follow_rotation(self, path: str) -> None:  # under self._lock
        """Open ``path`` anew when it no longer names the file written to.

        logrotate's default renames the log and leaves the program running: held open,
        the renamed file took every later line, and lost them all once compressed or
        deleted. As the standard library's ``WatchedFileHandler``, the sink follows the
        path (a new file, or a file created there). Whatever cannot be opened leaves the
        lines going where they went.
        """
        try:
            on_disk = os.stat(path)
            written = os.fstat(self._stream.fileno())
        except FileNotFoundError:
            on_disk = None
        except OSError:
            return
        if on_disk is not None and (on_disk.st_dev, on_disk.st_ino) == (
            written.st_dev, written.st_ino
        ):
            return
        try:
            fresh = open(path, "ab", buffering=0)  # noqa: SIM115  (the sink owns it)
        except OSError:
            return
        old, self._stream = self._stream, fresh
        self._torn = False  # a torn line stays in the old file; the new one starts clean
        with contextlib.suppress(OSError):
            old.close()

    def stop(self) -> None:
        """Loguru calls this when the handler is removed: flush, leave the event
        writer's list, close the file the sink opened."""
        unregister_event_sink(self)
        with contextlib.suppress(Exception):
            self.drain()
        with self._lock:
            self._stopped = True
            # Only the files configure_logging opened (by path); streams are the caller's.
            if self._raw and isinstance(self.target, str):
                self._stream.close()

    def _forget_pending(self) -> None:
        # In a forked child: the parent writes its own gathered lines.
        self._pending.clear()
        self._flush_loop = None
        self._lock = threading.Lock()


_all_sinks: weakref.WeakSet[JsonLinesSink] = weakref.WeakSet()

# The sinks ridtrace's events are written to directly; replaced as a whole tuple, so a
# writer iterating it never sees it change.
_event_sinks: tuple[JsonLinesSink, ...] = ()
_event_sinks_lock = threading.Lock()


def event_sinks() -> tuple[JsonLinesSink, ...]:
    """The sinks that take ridtrace's events directly (empty: send them through loguru)."""
    return _event_sinks


def register_event_sink(sink: JsonLinesSink) -> None:
    """Send ridtrace's events to ``sink`` directly."""
    global _event_sinks
    with _event_sinks_lock:
        _event_sinks = (*_event_sinks, sink)


def unregister_event_sink(sink: JsonLinesSink) -> None:
    """Stop sending events to ``sink``."""
    global _event_sinks
    with _event_sinks_lock:
        _event_sinks = tuple(s for s in _event_sinks if s is not sink)


def replace_sinks_of(target: object) -> None:
    """Remove the loguru handlers of the live sinks that write to ``target``."""
    from loguru import logger

    for sink in list(_all_sinks):
        if sink._stopped or sink.handler_id is None:
            continue
        same = sink.target == target if isinstance(target, str) else sink.target is target
        if same:
            with contextlib.suppress(ValueError):  # removed already, by its id
                logger.remove(sink.handler_id)


def lowest_level() -> int | None:
    """The lowest ``levelno`` of the sinks not yet removed, or ``None`` without any."""
    levels = [sink.levelno for sink in list(_all_sinks) if not sink._stopped]
    return min(levels) if levels else None


def flush_sinks() -> None:
    """Write every sink's gathered lines now (shutdown, interpreter exit)."""
    for sink in list(_all_sinks):
        try:
            sink.drain()
        except Exception as exc:  # one failing sink must not keep the others' lines
            report_write_error(exc)


def report_write_error(exc: Exception) -> None:
    """What loguru's ``catch=True`` does for a failing sink: say so on stderr, go on.
    (A write the stream refuses is the sink's own to report, once: it never gets here.)"""
    _say(f"ridtrace: could not write an event line: {exc!r}")


def _say(line: str) -> None:
    with contextlib.suppress(Exception):  # nowhere left to report to
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _forget_pending_in_child() -> None:
    for sink in list(_all_sinks):
        sink._forget_pending()


_exit_hooks_installed = False


def _flush_at_exit() -> None:
    # Installed with the first sink, not at import: importing ridtrace changes nothing.
    global _exit_hooks_installed
    if _exit_hooks_installed:
        return
    _exit_hooks_installed = True
    atexit.register(flush_sinks)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_forget_pending_in_child)
