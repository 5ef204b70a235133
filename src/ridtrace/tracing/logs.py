"""JSON-lines logging through loguru, with request identity on every line.

Nothing here runs at import. :func:`configure_logging` adds one sink and one patcher
to loguru and, optionally, routes the standard library's logging (uvicorn, httpx,
libraries) into the same sink, so every line has the same shape (docs/log-schema.md).
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import orjson
from loguru import logger

from ridtrace.tracing.context import current_context

if TYPE_CHECKING:
    from loguru import Message, Record

__all__ = ["LOG_SCHEMA", "configure_logging"]

LOG_SCHEMA = "ridtrace/1"

# Keys the formatter owns; an extra with one of these names is written with a
# leading underscore instead of overwriting the real value.
_RESERVED = frozenset({"time", "level", "message", "logger", "schema", "service", "pid"})
_CONTEXT_KEYS = ("request_id", "x_request_id", "trace_id", "span_id", "parent_span_id")
_LEVEL_NAMES = {"WARNING": "WARN", "SUCCESS": "INFO"}


def _patch_request_context(record: Record) -> None:
    """Copy the current request's ids into ``extra`` (a patcher, not contextualize:
    contextualize breaks in async generators cancelled by a client disconnect)."""
    ctx = current_context()
    if ctx is None:
        return
    extra = record["extra"]
    extra.setdefault("request_id", ctx.request_id)
    if ctx.x_request_id is not None:
        extra.setdefault("x_request_id", ctx.x_request_id)
    extra.setdefault("trace_id", ctx.trace_id)
    extra.setdefault("span_id", ctx.span_id)
    if ctx.parent_span_id is not None:
        extra.setdefault("parent_span_id", ctx.parent_span_id)


# (whole UTC second, its "YYYY-MM-DDTHH:MM:SS" text): lines written within one second
# share the prefix, so only the microseconds are formatted per line. Replaced as one
# tuple, so concurrent writers never see a second paired with another's text.
_stamp_cache: tuple[int, str] = (-1, "")


def _utc_stamp(moment: datetime) -> str:
    global _stamp_cache
    # timestamp() is exact to well under a microsecond for current dates, so its floor
    # is the UTC second and the microseconds are the record's own (offsets are whole
    # seconds), matching fromtimestamp(...).isoformat(timespec="microseconds").
    second = math.floor(moment.timestamp())
    cached_second, prefix = _stamp_cache
    if second != cached_second:
        prefix = datetime.fromtimestamp(second, timezone.utc).isoformat()[:-6]
        _stamp_cache = (second, prefix)
    return f"{prefix}.{moment.microsecond:06d}Z"


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
    for key, value in record["extra"].items():
        if value is not None:  # absent, not null: keeps lines short and columns sparse
            line["_" + key if key in _RESERVED else key] = value
    if record["exception"] is not None:
        exc = record["exception"]
        line["exception"] = f"{exc.type.__name__ if exc.type else 'Exception'}: {exc.value}"
    try:
        return orjson.dumps(line, default=str, option=orjson.OPT_APPEND_NEWLINE)
    except (TypeError, orjson.JSONEncodeError):
        # Lone surrogates (undecodable bytes smuggled into str) and other values orjson
        # refuses: fall back to the stdlib's ASCII-escaping encoder rather than lose the line.
        return (json.dumps(line, default=str, ensure_ascii=True) + "\n").encode("ascii")


class _JsonLinesSink:
    """Writes each record as one JSON line and flushes it, so a crash loses nothing.

    No lock of its own: loguru calls a handler's sink under that handler's lock, and
    each sink belongs to exactly one handler.
    """

    def __init__(self, stream: IO[bytes], service: str, *, raw: bool = False) -> None:
        self._stream = stream
        self._service = service
        # A file configure_logging opened unbuffered takes each line in one write(2),
        # without the copy into a buffer and the flush; a caller's stream gets both.
        self._raw = raw

    def write(self, message: Message) -> None:
        data = format_record(message.record, self._service)
        stream = self._stream
        if self._raw:
            written = stream.write(data)
            while written < len(data):  # a short write must not leave half a line
                data = data[written:]
                written = stream.write(data)
        else:
            stream.write(data)
            stream.flush()

    def close(self) -> None:
        if self._stream not in (sys.stdout.buffer, sys.stderr.buffer):
            self._stream.close()


class _InterceptHandler(logging.Handler):
    """Forwards standard-library records to loguru, keeping level and logger name."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            level: str | int = logger.level(record.levelname).name
        except ValueError:
            level = record.levelno
        logger.patch(lambda r: r.update({"name": record.name})).opt(
            exception=record.exc_info, depth=0
        ).log(level, record.getMessage())


def configure_logging(
    sink: str | os.PathLike[str] | IO[bytes] | None = None,
    *,
    service: str = "app",
    level: str | int = "INFO",
    intercept_stdlib: bool = True,
) -> int:
    """Add a JSON-lines sink to loguru and return its handler id.

    Args:
        sink: a file path (appended to; parent folders are created), a binary stream,
            or ``None`` for standard error.
        service: written as ``service`` on every line (``frontend``, ``worker-8101``).
        level: lowest level written.
        intercept_stdlib: route the standard library's logging (uvicorn's included)
            into loguru so those lines get the same shape and request ids.
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
    writer = _JsonLinesSink(stream, service, raw=raw)
    logger.configure(patcher=_patch_request_context)
    handler_id = logger.add(writer.write, level=level, format="{message}", catch=True)
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
