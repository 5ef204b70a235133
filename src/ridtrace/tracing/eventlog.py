"""Writing ridtrace's own events: ``request.start``, ``request.end``, dispatch, worker.

An event is one log line with an ``event`` key and flat fields. When
:func:`ridtrace.configure_logging` has set up sinks that take events directly (its
default), the line is rendered once and written to them, the same JSON a loguru
record would have become there but without building that record: the lifecycle lines
were the largest cost ridtrace added to a request. With no such sink, the event is
logged through loguru like any other message, so an application that only uses its
own loguru handlers still sees every event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from loguru import logger

from ridtrace.tracing.context import current_context
from ridtrace.tracing.jsonline import (
    add_context_ids,
    event_tail,
    event_through_loguru,
    utc_now,
)
from ridtrace.tracing.sinks import event_sinks, report_write_error

if TYPE_CHECKING:
    from loguru import Record

__all__ = ["EventLog"]

_LEVEL_NUMBERS = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40}


class EventLog:
    """The events of one module: ``events = EventLog(__name__)``, then
    ``events.info("request.start", event="request.start", method="GET")``.

    ``__name__`` becomes the line's ``logger``, as loguru would have named it.
    """

    __slots__ = ("_named", "source")

    def __init__(self, source: str) -> None:
        self.source = source

        def name_the_source(record: Record) -> None:
            record["name"] = source

        # Through loguru, a record is named after the module that logged it, and some
        # events are logged by a module other than the one they are named for
        # (request.start by ridtrace.tracing.observed): the line's logger then changed
        # with events_via_loguru. Same name whichever way the line goes.
        self._named = logger.patch(name_the_source)

    def debug(self, message: str, /, **fields: Any) -> None:
        self._emit("DEBUG", message, fields)

    def info(self, message: str, /, **fields: Any) -> None:
        self._emit("INFO", message, fields)

    def warning(self, message: str, /, **fields: Any) -> None:
        self._emit("WARNING", message, fields)

    def error(self, message: str, /, **fields: Any) -> None:
        self._emit("ERROR", message, fields)

    def exception(self, message: str, /, **fields: Any) -> None:
        """An ERROR event with the exception being handled (``exception`` and
        ``traceback``, as `logger.exception` writes them), through loguru, which renders
        tracebacks; marked as ridtrace's own, so its ``event`` is not taken for an
        application's field of that name."""
        with event_through_loguru(fields):
            self._named.opt(exception=True, depth=1).error(message, **fields)

    def _emit(self, level: str, message: str, fields: dict[str, Any]) -> None:
        sinks = event_sinks()
        if not sinks:
            # The ids go with the event itself: configure_logging's patcher, which
            # copies them into every record, is not there in an application that only
            # has loguru handlers of its own, whose events then carried none. A field
            # the caller passed wins, as the patcher has it.
            ctx = current_context()
            if ctx is not None:
                add_context_ids(fields, ctx)
            # depth=2: the file, function and line are those of the caller of info() & co.
            with event_through_loguru(fields):
                self._named.opt(depth=2).log(level, message, **fields)
            return
        levelno = _LEVEL_NUMBERS[level]
        stamp = ""
        tail: bytes | None = None
        for sink in sinks:
            if levelno < sink.event_levelno:
                continue
            try:
                if tail is None:  # ids and fields encoded once, for every sink
                    stamp = utc_now()
                    tail = event_tail(fields, current_context())
                sink.write_event(stamp, level, message, self.source, tail)
            except Exception as exc:  # telemetry never changes a request's outcome
                report_write_error(exc)
