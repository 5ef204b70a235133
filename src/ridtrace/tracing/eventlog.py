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

from typing import Any

from loguru import logger

from ridtrace.tracing.context import current_context
from ridtrace.tracing.jsonline import add_context_ids, event_tail, utc_now
from ridtrace.tracing.sinks import event_sinks, report_write_error

__all__ = ["EventLog"]

_LEVEL_NUMBERS = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40}


class EventLog:
    """The events of one module: ``events = EventLog(__name__)``, then
    ``events.info("request.start", event="request.start", method="GET")``.

    ``__name__`` becomes the line's ``logger``, as loguru would have named it.
    """

    __slots__ = ("source",)

    def __init__(self, source: str) -> None:
        self.source = source

    def debug(self, message: str, **fields: Any) -> None:
        self._emit("DEBUG", message, fields)

    def info(self, message: str, **fields: Any) -> None:
        self._emit("INFO", message, fields)

    def warning(self, message: str, **fields: Any) -> None:
        self._emit("WARNING", message, fields)

    def error(self, message: str, **fields: Any) -> None:
        self._emit("ERROR", message, fields)

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
            # depth=2: loguru names the line after the module that called info() & co.
            logger.opt(depth=2).log(level, message, **fields)
            return
        levelno = _LEVEL_NUMBERS[level]
        stamp = ""
        tail: bytes | None = None
        for sink in sinks:
            if levelno < sink.levelno:
                continue
            try:
                if tail is None:  # ids and fields encoded once, for every sink
                    stamp = utc_now()
                    tail = event_tail(fields, current_context())
                sink.write_event(stamp, level, message, self.source, tail)
            except Exception as exc:  # telemetry never changes a request's outcome
                report_write_error(exc)
