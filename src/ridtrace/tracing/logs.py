"""JSON-lines logging through loguru, with request identity on every line.

Nothing here runs at import. :func:`configure_logging` adds one sink and one patcher
to loguru and, optionally, routes the standard library's logging (uvicorn, httpx,
libraries) into the same sink, so every line has the same shape (docs/log-schema.md).

ridtrace's own events (``request.start`` / ``request.end`` and the like, written with
:class:`ridtrace.tracing.eventlog.EventLog`) reach these sinks directly, as the same
lines: building a loguru record per event was most of what the lifecycle lines cost a
request. ``configure_logging(events_via_loguru=True)`` sends them through loguru instead.
Line rendering lives in :mod:`ridtrace.tracing.jsonline`, the sink in
:mod:`ridtrace.tracing.sinks`.
"""

from __future__ import annotations

import codecs
import io
import os
import re
import sys
import threading
import traceback
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

from loguru import logger

from ridtrace.contract import LOG_SCHEMA
from ridtrace.tracing.context import line_context
from ridtrace.tracing.exception_text import exception_text
from ridtrace.tracing.jsonline import (
    APPLICATION_RESERVED,
    CONTEXT_KEYS,
    EVENT_IDS,
    EVENT_THROUGH_LOGURU,
    IDS_SETTLED,
    add_context_ids,
    add_fields,
    dumps,
    flatten,
    ids_as_context,
    ids_named,
    request_ids_first,
    schema_level,
    utc_stamp,
)
from ridtrace.tracing.otlp_endpoints import endpoint_secrets_hidden, endpoint_secrets_known
from ridtrace.tracing.sinks import (
    JsonLinesSink,
    lowest_level,
    register_event_sink,
    replace_sinks_of,
)
from ridtrace.tracing.stdlib_bridge import route_stdlib_logging

if TYPE_CHECKING:
    from loguru import Record

__all__ = ["LOG_SCHEMA", "configure_logging"]

# loguru's global extra (``logger.configure(extra={...})``): the dict is cleared and
# refilled in place by every configure call, so this reference stays the live one.
_configured_extra: dict[str, Any] = getattr(getattr(logger, "_core", None), "extra", {})


def _placeholder_ids(extra: dict[str, Any]) -> tuple[str, ...]:
    """The context keys of ``extra`` that still hold the value ``logger.configure(extra=
    {...})`` gave them: loguru's documented way to give a format string such as
    ``{extra[request_id]}`` a default outside requests, not an id anyone passed."""
    if not _configured_extra:  # the usual case: nothing to look at on the hot path
        return ()
    return tuple(
        key for key in CONTEXT_KEYS
        if key in _configured_extra and extra.get(key) is _configured_extra[key]
    )


def _patch_request_context(record: Record) -> None:
    """Copy the current request's ids into ``extra`` (a patcher, not contextualize:
    contextualize breaks in async generators cancelled by a client disconnect)."""
    ctx = line_context()
    if ctx is not None:
        extra = record["extra"]
        # A configured default is no id the caller passed: the request's replaces it
        # (it took the place of the request's ids on every line, ridtrace's and the
        # application's own console format alike). One the request has not is left
        # for the application's format strings; the JSON line drops it.
        placeholders = _placeholder_ids(extra)
        for key in placeholders:
            value = getattr(ctx, key)
            if value is not None:
                extra[key] = value
        if EVENT_THROUGH_LOGURU.get():
            add_context_ids(extra, ctx)
        else:
            request_ids_first(extra, ctx, placeholders)


def _install_patcher() -> None:
    """Make :func:`_patch_request_context` loguru's patcher, keeping one the application
    already set with ``logger.configure(patcher=...)``: loguru holds a single patcher
    and ``configure`` replaces it, so the application's (a hostname, a tenant) was
    silently dropped from every line."""
    previous = getattr(getattr(logger, "_core", None), "patcher", None)
    if previous is _patch_request_context or getattr(previous, "_ridtrace_chained", False):
        return  # a second configure_logging call: ours is in place already
    if previous is None:
        logger.configure(patcher=_patch_request_context)
        return

    def patch_both(record: Record) -> None:
        previous(record)
        _patch_request_context(record)

    patch_both._ridtrace_chained = True  # type: ignore[attr-defined]
    logger.configure(patcher=patch_both)


def format_record(record: Record, service: str) -> bytes:
    """Render one loguru record as a JSON line (bytes, newline-terminated)."""
    line: dict[str, Any] = {
        "time": utc_stamp(record["time"]),
        "level": schema_level(record["level"].name, record["level"].no),
        "message": record["message"],
        "logger": record["name"] or "",
        "schema": LOG_SCHEMA,
        "service": service,
        "pid": record["process"].id,
    }
    extra = record["extra"]
    placeholders = _placeholder_ids(extra)
    if placeholders:  # a format string's default, not the request's id (no request)
        extra = {k: v for k, v in extra.items() if k not in placeholders}
    if EVENT_THROUGH_LOGURU.get():  # ridtrace's own event, when it has no sink (`eventlog`)
        # The ids the event names, whatever a patcher of the application's set since.
        add_fields(line, ids_named(extra, EVENT_IDS.get() or {}))
    else:
        # Loguru holds one patcher, and logger.configure(patcher=...) called after
        # configure_logging replaced ours: every line lost the request's ids. A per-call
        # logger.patch(...) runs after ours and may set an id itself. The sink runs in
        # the logging call's own context, so the request's ids are there to put first.
        ctx = None if record.get(IDS_SETTLED) else line_context()
        if ctx is not None:
            extra = ids_as_context(extra, ctx)
        add_fields(line, extra, APPLICATION_RESERVED)
    flatten(line)
    exc = record["exception"]
    # opt(exception=True) outside an except block records an exception of type None.
    if exc is not None and exc.type is not None:
        # Not str(): one that raises lost the whole line (loguru reported it on stderr),
        # uvicorn's "Exception in ASGI application" too, the crash's only record.
        line["exception"] = f"{exc.type.__name__}: {exception_text(exc.value)}"
        # The frames are the evidence of a crash; one string, so still one line.
        line["traceback"] = "".join(
            traceback.format_exception(exc.type, exc.value, exc.traceback)
        )
    if endpoint_secrets_known():  # an OTLP endpoint with a key in it: never in a line
        for key in ("message", "exception", "traceback"):
            if key in line:
                line[key] = endpoint_secrets_hidden(line[key])
    return dumps(line)



class _TextStream:
    """A text stream (``sys.stdout``, ``io.StringIO``) behind the bytes the sink writes."""

    def __init__(self, stream: io.TextIOBase) -> None:
        self._stream = stream
        # A stream in an encoding that has no room for every character (stdout under
        # PYTHONIOENCODING=latin-1, a C locale's ascii) refused a line holding one, and
        # the events gathered with it went too; what it did encode was no UTF-8. Its
        # lines are written with JSON's \u escapes: ASCII, which every such encoding has.
        encoding = getattr(stream, "encoding", None) or "utf-8"
        try:
            whole = codecs.lookup(encoding).name.startswith("utf-")
        except LookupError:
            whole = False
        self._ascii_only = not whole

    def write(self, data: bytes) -> int:
        text = data.decode("utf-8")
        if self._ascii_only and not text.isascii():
            text = _NON_ASCII.sub(_json_escape, text)
        self._stream.write(text)
        return len(data)

    def flush(self) -> None:
        self._stream.flush()


# A line's non-ASCII characters are all inside its JSON strings, where an escape is the
# same character to any reader.
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # past the basic plane: a surrogate pair, as JSON spells it
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _stream_of(sink: object) -> IO[bytes]:
    # Checked here, once: a wrong sink otherwise failed on every write, each failure a
    # loguru error report, far from the call that caused it.
    if isinstance(sink, io.TextIOBase):
        return cast("IO[bytes]", _TextStream(sink))
    if isinstance(sink, (bytes, bytearray)) or not callable(getattr(sink, "write", None)):
        raise TypeError(
            "configure_logging(sink=...) takes a file path (str or os.PathLike), a stream "
            "with write() (binary, or text such as sys.stdout / io.StringIO), or None for "
            f"standard error; got {type(sink).__name__}"
        )
    return cast("IO[bytes]", sink)


_STANDARD_STREAMS = {"<stdout>": "standard output", "<stderr>": "standard error",
                     1: "standard output", 2: "standard error"}  # a file opened on fd 1, 2


def _place_of(stream: object) -> str:
    """A stream as the line about a write it refused names it."""
    name = getattr(stream, "name", None)
    if isinstance(name, (str, int)) and name in _STANDARD_STREAMS:
        return _STANDARD_STREAMS[name]
    if isinstance(name, str) and name:
        return f"log file {name}"
    return f"the log stream ({type(stream).__name__})"


def configure_logging(
    sink: str | os.PathLike[str] | IO[bytes] | IO[str] | None = None,
    *,
    service: str = "app",
    level: str | int = "INFO",
    intercept_stdlib: bool = True,
    events_via_loguru: bool = False,
    event_level: str | int | None = None,
) -> int:
    """Add a JSON-lines sink to loguru and return its handler id.

    Args:
        sink: a file path (appended to; parent folders are created), a binary stream
            (``open(path, "ab")``, ``sys.stderr.buffer``, ``io.BytesIO``), a text
            stream (``sys.stdout``, ``io.StringIO``; written as UTF-8 text), or
            ``None`` for standard error. Anything else raises ``TypeError``.
        service: written as ``service`` on every line (``frontend``, ``worker-8101``).
        level: lowest level written: a loguru level name in any case (``WARN`` is
            ``WARNING``, as the log schema spells it) or number. An unknown name raises
            ``ValueError``.
        intercept_stdlib: route the standard library's logging (uvicorn's included)
            into loguru so those lines get the same shape and request ids.
        events_via_loguru: ridtrace's own events (``request.start``, ``request.end``,
            dispatch, worker and deprecation events) are written straight to this
            sink by default, the same lines at a fraction of the cost, and other
            loguru handlers do not see them. ``True`` leaves this sink out of that
            path: while no sink takes events directly, they go through loguru, so
            every handler, filter, patcher and ``logger.contextualize()`` value
            applies to them. Pass the same value on every call.
        event_level: the lowest level of ridtrace's own events this sink writes, when
            lower than `level` (``"INFO"``: every request's ``request.start`` and
            ``request.end``, the lines ``ridtrace analyze`` reads, whatever `level`
            leaves out of the rest), straight or, with `events_via_loguru`, through
            loguru; ``None``: `level`.

    ``logger.remove(handler_id)`` (or ``logger.remove()``) removes the sink from both
    paths and closes the file it opened.
    """
    raw = False
    target: object
    # Levels first: a level refused after the sink was opened left a log file (and its
    # directories) made for a logger that never started (`serve --log-level bad`).
    if isinstance(level, str):
        level = _loguru_level(level)
    levelno = _levelno(level)
    event_levelno = levelno if event_level is None else min(levelno, _levelno(event_level))
    if sink is None:
        stream: IO[bytes] = sys.stderr.buffer
        target = stream
        place = "standard error"
    elif isinstance(sink, (str, os.PathLike)):
        path = Path(sink)
        path.parent.mkdir(parents=True, exist_ok=True)
        target = str(path.resolve())
        stream, raw = path.open("ab", buffering=0), True
        place = f"log file {os.fspath(sink)}"
    else:
        # A text stream and its binary buffer are one stream (`sys.stderr` and the
        # `sys.stderr.buffer` that None means): both sinks wrote every line.
        stream, target = _stream_of(sink), getattr(sink, "buffer", None) or sink
        place = _place_of(sink)
        # An unbuffered file (standard output opened by descriptor, ``serve --log-file
        # -``) is written as the sink's own file is: a short write's rest retried, a line
        # torn by a full disk ended alone. Through a buffered writer a refused write
        # stayed in its buffer, flushed again at exit: the exit status was 120.
        raw = isinstance(stream, io.RawIOBase)
    writer = JsonLinesSink(stream, service, raw=raw, levelno=levelno, target=target,
                           place=place, event_levelno=event_levelno)
    _install_patcher()
    # A second call for the same file or stream (an app factory run twice, a module
    # imported under two names) replaces the first call's sink: both wrote every line,
    # so the file held each line twice. One call at a time: two threads' calls both
    # found nothing to replace and both added theirs.
    with _CONFIGURING:
        replace_sinks_of(target)
        # The sink object itself (not its bound write), so loguru calls its stop() on
        # removal.
        if events_via_loguru and event_levelno < levelno:
            # ridtrace's events reach this sink through loguru: its level let those
            # below `level` through, and event_level did nothing (request.start and
            # request.end lost at level="WARNING"). Loguru's filter runs in the call.
            def events_too(record: Record) -> bool:
                return record["level"].no >= levelno or EVENT_THROUGH_LOGURU.get()

            handler_id = logger.add(writer, level=event_levelno, format="{message}",
                                    catch=True, filter=events_too)
        else:
            handler_id = logger.add(writer, level=level, format="{message}", catch=True)
        writer.handler_id = handler_id
        if not events_via_loguru:
            register_event_sink(writer)
    if intercept_stdlib:
        # Every sink gets the standard library's records through one root logger: it
        # lets through what the most verbose sink wants (not the last call's level,
        # which starved a DEBUG file of them once a WARNING console was added). By
        # number, as loguru counts: TRACE (5) lets the standard library's DEBUG in.
        route_stdlib_logging(lowest_level() or levelno)
    return handler_id


# Held while a configure_logging call replaces and adds its sink.
_CONFIGURING = threading.Lock()

_LOGURU_LEVELS = ("TRACE", "DEBUG", "INFO", "SUCCESS", "WARNING", "ERROR", "CRITICAL")


def _levelno(level: str | int) -> int:
    """A level's number, its name read as `_loguru_level` reads it; a negative number
    refused here, as loguru's `add` refuses it, but before the sink is opened."""
    if isinstance(level, int):
        if level < 0:
            raise ValueError(f"Invalid level value, it should be a positive integer, not: {level}")
        return level
    return logger.level(_loguru_level(level)).no


def _loguru_level(name: str) -> str:
    """A level name as loguru knows it: any case, and ``WARN`` (the log schema's own
    spelling, and the standard library's alias) for ``WARNING``. A custom level's name
    is kept as given."""
    upper = name.upper()
    if upper == "WARN":
        return "WARNING"
    return upper if upper in _LOGURU_LEVELS else name
