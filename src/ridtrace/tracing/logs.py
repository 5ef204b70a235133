"""JSON-lines logging through loguru, with request identity on every line.

Nothing here runs at import. :func:`configure_logging` adds one sink and one patcher
to loguru and, optionally, routes the standard library's logging (uvicorn, httpx,
libraries) into the same sink, so every line has the same shape (docs/log-schema.md).

ridtrace's own events (``request.start`` / ``request.end`` and the like, written with
:class:`ridtrace.tracing.eventlog.EventLog`) reach these sinks directly, as the same
lines: building a loguru record per event was most of what the lifecycle lines cost a
request. ``configure_logging(events_via_loguru=True)`` sends them through loguru instead.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
import threading
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import orjson
from loguru import logger

from ridtrace.contract import LOG_SCHEMA
from ridtrace.tracing.context import RequestContext, context_of_exception, current_context

if TYPE_CHECKING:
    from loguru import Message, Record

__all__ = ["LOG_SCHEMA", "configure_logging"]

# Keys the formatter owns; an extra with one of these names is written with a
# leading underscore instead of overwriting the real value.
_RESERVED = frozenset({"time", "level", "message", "logger", "schema", "service", "pid"})
_CONTEXT_KEYS = ("request_id", "x_request_id", "trace_id", "span_id", "parent_span_id")
_LEVEL_NAMES = {"WARNING": "WARN", "SUCCESS": "INFO"}
_NONE_ID = id(None)


def _patch_request_context(record: Record) -> None:
    """Copy the current request's ids into ``extra`` (a patcher, not contextualize:
    contextualize breaks in async generators cancelled by a client disconnect)."""
    ctx = current_context()
    if ctx is not None:
        _add_context_ids(record["extra"], ctx)


def _add_context_ids(extra: dict[str, Any], ctx: RequestContext) -> None:
    """The request's ids, except where the line already names one: an id the caller
    passed wins over the context's."""
    for key in _CONTEXT_KEYS:
        value = getattr(ctx, key)
        if value is not None:
            extra.setdefault(key, value)


# (whole UTC second, its "YYYY-MM-DDTHH:MM:SS" text): lines written within one second
# share the prefix, so only the microseconds are formatted per line. Replaced as one
# tuple, so concurrent writers never see a second paired with another's text.
_stamp_cache: tuple[int, str] = (-1, "")


def _stamp(second: int, microsecond: int) -> str:
    global _stamp_cache
    cached_second, prefix = _stamp_cache
    if second != cached_second:
        prefix = datetime.fromtimestamp(second, timezone.utc).isoformat()[:-6]
        _stamp_cache = (second, prefix)
    return f"{prefix}.{microsecond:06d}Z"


def _utc_stamp(moment: datetime) -> str:
    # timestamp() is exact to well under a microsecond for current dates, so its floor
    # is the UTC second and the microseconds are the record's own (offsets are whole
    # seconds), matching fromtimestamp(...).isoformat(timespec="microseconds").
    return _stamp(math.floor(moment.timestamp()), moment.microsecond)


def _utc_now() -> str:
    second, microsecond = divmod(time.time_ns() // 1000, 1_000_000)
    return _stamp(second, microsecond)


# getpid() is a real syscall in current glibc; the id only changes in a forked child.
_pid = os.getpid()


def _refresh_pid() -> None:
    global _pid
    _pid = os.getpid()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_refresh_pid)


def _add_fields(line: dict[str, Any], fields: Mapping[str, Any]) -> None:
    # The usual case, no reserved key and no None, in one C-level update. None is
    # found by identity: a value's own __eq__ (an array's, say) must never run here.
    if _RESERVED.isdisjoint(fields) and _NONE_ID not in map(id, fields.values()):
        line.update(fields)
        return
    for key, value in fields.items():
        if value is not None:  # absent, not null: keeps lines short and columns sparse
            line["_" + key if key in _RESERVED else key] = value


def _dumps(line: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(line, default=str, option=orjson.OPT_APPEND_NEWLINE)
    except (TypeError, orjson.JSONEncodeError):
        # Lone surrogates (undecodable bytes smuggled into str) and other values orjson
        # refuses: fall back to the stdlib's ASCII-escaping encoder rather than lose the line.
        return (json.dumps(line, default=str, ensure_ascii=True) + "\n").encode("ascii")


def format_record(record: Record, service: str) -> bytes:
    """Render one loguru record as a JSON line (bytes, newline-terminated)."""
    level = record["level"].name
    line: dict[str, Any] = {
        "time": _utc_stamp(record["time"]),
        "level": _LEVEL_NAMES.get(level, level),
        "message": record["message"],
        "logger": record["name"] or "",
        "schema": LOG_SCHEMA,
        "service": service,
        "pid": record["process"].id,
    }
    _add_fields(line, record["extra"])
    if record["exception"] is not None:
        exc = record["exception"]
        line["exception"] = f"{exc.type.__name__ if exc.type else 'Exception'}: {exc.value}"
    return _dumps(line)


def event_line(source: str, level: str, message: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The line an event would become through loguru and the patcher, without loguru.

    ``service`` is a placeholder each sink fills in: sinks may name different services.
    """
    line: dict[str, Any] = {
        "time": _utc_now(),
        "level": _LEVEL_NAMES.get(level, level),
        "message": message,
        "logger": source,
        "schema": LOG_SCHEMA,
        "service": "",
        "pid": _pid,
    }
    ctx = current_context()
    if ctx is not None:
        if fields.keys().isdisjoint(_CONTEXT_KEYS):
            _add_context_ids(line, ctx)
        else:  # rare: keep the caller's id, as the patcher does
            fields = {**fields}
            _add_context_ids(fields, ctx)
    _add_fields(line, fields)
    return line


class _JsonLinesSink:
    """Writes each record as one JSON line and flushes it, so a crash loses nothing.

    Loguru hands it records (``write``); ridtrace's event writer hands it ready lines
    (``write_event``) without holding loguru's handler lock, hence a lock of its own.
    Loguru calls ``stop`` when the handler is removed: the sink then leaves the event
    writer's list and closes the file it opened.
    """

    def __init__(
        self, stream: IO[bytes], service: str, *, raw: bool = False, levelno: int = 0
    ) -> None:
        self._stream = stream
        self._service = service
        # A file configure_logging opened unbuffered takes each line in one write(2),
        # without the copy into a buffer and the flush; a caller's stream gets both.
        self._raw = raw
        self.levelno = levelno
        self._lock = threading.Lock()
        self._stopped = False

    def write(self, message: Message) -> None:
        self._write(format_record(message.record, self._service))

    def write_event(self, line: dict[str, Any]) -> None:
        line["service"] = self._service
        self._write(_dumps(line))

    def _write(self, data: bytes) -> None:
        stream = self._stream
        with self._lock:
            if self._stopped:
                return
            if self._raw:
                written = stream.write(data)
                while written is not None and written < len(data):  # never half a line
                    data = data[written:]
                    written = stream.write(data)
            else:
                stream.write(data)
                stream.flush()

    def stop(self) -> None:
        _unregister_event_sink(self)
        with self._lock:
            self._stopped = True
            if self._raw:  # only the files configure_logging opened; streams are the caller's
                self._stream.close()


# The sinks ridtrace's events are written to directly; replaced as a whole tuple, so a
# writer iterating it never sees it change.
_event_sinks: tuple[_JsonLinesSink, ...] = ()
_event_sinks_lock = threading.Lock()


def event_sinks() -> tuple[_JsonLinesSink, ...]:
    """The sinks that take ridtrace's events directly (empty: send them through loguru)."""
    return _event_sinks


def _register_event_sink(sink: _JsonLinesSink) -> None:
    global _event_sinks
    with _event_sinks_lock:
        _event_sinks = (*_event_sinks, sink)


def _unregister_event_sink(sink: _JsonLinesSink) -> None:
    global _event_sinks
    with _event_sinks_lock:
        _event_sinks = tuple(s for s in _event_sinks if s is not sink)


class _InterceptHandler(logging.Handler):
    """Forwards standard-library records to loguru, keeping level and logger name."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            level: str | int = logger.level(record.levelname).name
        except ValueError:
            level = record.levelno
        # A server that logs a request's escaped exception after the request's context
        # is gone (grpc.aio does): the ids travel on the exception.
        ctx = None
        if record.exc_info and current_context() is None:
            ctx = context_of_exception(record.exc_info[1])

        def patch(r: Record) -> None:
            r["name"] = record.name
            if ctx is not None:
                _add_context_ids(r["extra"], ctx)

        logger.patch(patch).opt(
            exception=record.exc_info, depth=0
        ).log(level, record.getMessage())


def configure_logging(
    sink: str | os.PathLike[str] | IO[bytes] | None = None,
    *,
    service: str = "app",
    level: str | int = "INFO",
    intercept_stdlib: bool = True,
    events_via_loguru: bool = False,
) -> int:
    """Add a JSON-lines sink to loguru and return its handler id.

    Args:
        sink: a file path (appended to; parent folders are created), a binary stream,
            or ``None`` for standard error.
        service: written as ``service`` on every line (``frontend``, ``worker-8101``).
        level: lowest level written.
        intercept_stdlib: route the standard library's logging (uvicorn's included)
            into loguru so those lines get the same shape and request ids.
        events_via_loguru: ridtrace's own events (``request.start``, ``request.end``,
            dispatch, worker and deprecation events) are written straight to this
            sink by default, the same lines at a fraction of the cost, and other
            loguru handlers do not see them. ``True`` leaves this sink out of that
            path: while no sink takes events directly, they go through loguru, so
            every handler, filter, patcher and ``logger.contextualize()`` value
            applies to them. Pass the same value on every call.

    ``logger.remove(handler_id)`` (or ``logger.remove()``) removes the sink from both
    paths and closes the file it opened.
    """
    raw = False
    if sink is None:
        stream: IO[bytes] = sys.stderr.buffer
    elif isinstance(sink, (str, os.PathLike)):
        path = Path(sink)
        path.parent.mkdir(parents=True, exist_ok=True)
        stream, raw = path.open("ab", buffering=0), True
    else:
        stream = sink
    levelno = level if isinstance(level, int) else logger.level(level).no
    writer = _JsonLinesSink(stream, service, raw=raw, levelno=levelno)
    logger.configure(patcher=_patch_request_context)
    # The sink object itself (not its bound write), so loguru calls its stop() on removal.
    handler_id = logger.add(writer, level=level, format="{message}", catch=True)
    if not events_via_loguru:
        _register_event_sink(writer)
    if intercept_stdlib:
        _route_stdlib_logging(level)
    return handler_id


def _route_stdlib_logging(level: str | int) -> None:
    numeric = logging.getLevelName(level) if isinstance(level, str) else level
    if not isinstance(numeric, int):
        numeric = logging.INFO
    handler = _InterceptHandler()
    logging.basicConfig(handlers=[handler], level=numeric, force=True)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "httpx", "httpcore"):
        std = logging.getLogger(name)
        std.handlers = []
        std.propagate = True
    # httpx logs every request at INFO; that noise is the caller's choice, not ours.
    logging.getLogger("httpx").setLevel(max(numeric, logging.WARNING))
    logging.getLogger("httpcore").setLevel(max(numeric, logging.WARNING))
