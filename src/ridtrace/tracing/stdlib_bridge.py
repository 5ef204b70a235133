"""The standard library's logging into loguru: uvicorn's, httpx's and any library's
records become JSON lines of the same shape as ridtrace's own (`ridtrace.tracing.logs`),
with the request's ids, the caller's ``extra={...}`` fields, and a library's message
capped and escaped."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any, cast

from loguru import logger

from ridtrace.tracing.context import context_for_exception_line
from ridtrace.tracing.identity import shown_text
from ridtrace.tracing.jsonline import CONTEXT_KEYS, IDS_SETTLED, add_context_ids, free_name
from ridtrace.tracing.log_ids import FILLED_BY_FILTER

if TYPE_CHECKING:
    from loguru import Record

__all__ = [
    "MAX_LIBRARY_MESSAGE",
    "InterceptHandler",
    "library_message",
    "reclaim_server_loggers",
    "route_stdlib_logging",
]


# Attributes every LogRecord has (and those logging adds while formatting): anything
# else on a record came from the caller's extra={...}. Except uvicorn's color_message:
# the message again, unformatted and with ANSI colours, for its own console formatter.
_RECORD_ATTRIBUTES = frozenset(
    vars(logging.LogRecord("", 0, "", 0, "", None, None))
) | {"message", "asctime", "taskName", "color_message"}


def _extra_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The caller's extra={...} fields. Libraries put ids of their own under names such
    as ``request_id``; the request's ids are the server's, so such a field is written
    with a leading ``_``, as a reserved name is."""
    fields = vars(record)
    # Ids a RequestIdsFilter on another handler set are the context's, not the caller's.
    filled = fields.get(FILLED_BY_FILTER, ())
    theirs = {k: v for k, v in fields.items()
              if k not in _RECORD_ATTRIBUTES and k not in filled and k != FILLED_BY_FILTER}
    if theirs.keys().isdisjoint(CONTEXT_KEYS):
        return theirs
    return {free_name(k, theirs) if k in CONTEXT_KEYS else k: v for k, v in theirs.items()}


class InterceptHandler(logging.Handler):
    """Forwards standard-library records to loguru, keeping level and logger name."""

    def emit(self, record: logging.LogRecord) -> None:
        # The standard library's handler contract: a record that cannot be rendered (a
        # "%d" given a string, an argument whose __str__ raises) goes to handleError,
        # which reports it on stderr and returns. Raised from here, it reached the
        # code that logged: one library's bad log call failed the request with a 500.
        try:
            self._forward(record)
        except Exception:
            self.handleError(record)

    def _forward(self, record: logging.LogRecord) -> None:
        try:
            level: str | int = logger.level(record.levelname).name
        except ValueError:
            level = record.levelno
        # A server that logs a request's escaped exception after the request's context
        # is gone (grpc.aio does): the ids travel on the exception.
        ctx = context_for_exception_line(record.exc_info[1]) if record.exc_info else None

        extra = _extra_fields(record)
        if record.stack_info:  # stack_info=True: the stack logging's formatter appends
            if "stack" in extra:  # the application's own, kept as a reserved key's is
                extra[free_name("stack", extra)] = extra["stack"]
            extra["stack"] = record.stack_info

        def patch(r: Record) -> None:
            r["name"] = record.name
            # Where the standard library's call was, not this handler: loguru's console
            # handlers show {function}:{line}, which read `_forward:85` on every line.
            r["function"], r["line"], r["module"] = record.funcName, record.lineno, record.module
            r["file"].name, r["file"].path = record.filename, record.pathname  # this record's own
            if ctx is not None:
                # The ids the patcher copied from the current context (the request the
                # exception escaped into) are not this line's.
                for key in CONTEXT_KEYS:
                    r["extra"].pop(key, None)
            r["extra"].update(extra)  # the caller's fields, as loguru's bind() would add
            if ctx is not None:
                add_context_ids(r["extra"], ctx)
                cast(dict[str, Any], r)[IDS_SETTLED] = True  # not the current request's

        logger.patch(patch).opt(
            exception=record.exc_info, depth=0
        ).log(level, library_message(record.getMessage()))


MAX_LIBRARY_MESSAGE = 4096
"""Longest message a standard-library record is written with (then cut, with a note)."""
# Line breaks and tabs are a library message's own layout, not something to hide.
_LAYOUT = str.maketrans("", "", "\n\t")


def library_message(message: str) -> str:
    """A library's message as a log line may carry it.

    Libraries put request data in their messages: OpenTelemetry's baggage propagator
    logs a whole over-long ``baggage`` header (up to the 64 KiB a request's headers may
    hold, on every such request) and each malformed entry, raw, obs-text bytes read as
    C1 control characters included. Such a message is capped and its non-printable
    characters escaped, as ridtrace's own client-chosen fields are.
    """
    if len(message) <= MAX_LIBRARY_MESSAGE and (
        message.isprintable() or message.translate(_LAYOUT).isprintable()
    ):
        return message
    return shown_text(message, MAX_LIBRARY_MESSAGE)


_SERVER_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")
# httpx2 and httpcore2: the clients the openai and anthropic SDKs send through (and
# Starlette's TestClient), which log each request as httpx does.
_HTTP_CLIENTS = ("httpx", "httpcore", "httpx2", "httpcore2")
_CHATTY_LOGGERS = (*_HTTP_CLIENTS, "watchfiles")


def route_stdlib_logging(numeric: int) -> None:
    """The standard library's records (uvicorn, httpx, libraries) into loguru's sinks."""
    handler = InterceptHandler()
    logging.basicConfig(handlers=[handler], level=numeric, force=True)
    for name in (*_SERVER_LOGGERS, *_HTTP_CLIENTS):
        std = logging.getLogger(name)
        if not std.propagate and not std.handlers:
            # Switched off, and meant to be: a logger that writes nowhere is what
            # uvicorn --no-access-log leaves (it configures logging before importing the
            # app); made to propagate, every request wrote its access line again.
            continue
        if not all(_writes_to_console(h) for h in std.handlers):
            # The operator's: `uvicorn --log-config` or gunicorn's `--access-logfile`
            # send it to a file, and both set logging up before importing the app. Its
            # handlers were dropped (unclosed) and that file stayed empty; as
            # `reclaim_server_loggers` leaves it when the server sets it up later.
            continue
        std.handlers = []
        std.propagate = True
    # httpx logs every request at INFO: quiet unless the application asked for it. A
    # level it set on these loggers is its choice: raised to WARNING, its outbound
    # calls' lines were gone. watchfiles logs each change it sees at INFO, and in a
    # reloader process that ran the app's module (`fastapi dev`) the log file's own
    # writes are changes: every line written logged the next one, for ever.
    for name in _CHATTY_LOGGERS:
        std = logging.getLogger(name)
        if std.level in (logging.NOTSET, _quieted.get(name)):
            _quieted[name] = max(numeric, logging.WARNING)
            std.setLevel(_quieted[name])


def reclaim_server_loggers() -> None:
    """uvicorn's loggers back into the sinks, when the server set them up after
    ``configure_logging`` routed them there.

    ``uvicorn.run(app)``, ``fastapi run`` / ``fastapi dev`` and gunicorn's
    ``--preload`` import the application (which calls ``configure_logging``) before
    the server builds its logging config, which gives uvicorn's loggers plain-text
    console handlers and stops them propagating: the startup lines, every access line
    with its request's ids and ``Exception in ASGI application`` with its traceback
    went to the console, never to the JSON log. Called when the server starts the
    lifespan, after its logging is set up. A logger with no handler that does not
    propagate was switched off (``access_log=False``) and stays so; one with a handler
    other than a console one (a file the application's own ``dictConfig`` sends
    ``uvicorn.access`` to) is the application's and stays as it set it.
    """
    if not any(isinstance(h, InterceptHandler) for h in logging.getLogger().handlers):
        return  # intercept_stdlib=False, or no configure_logging: the loggers are the app's
    for name in _SERVER_LOGGERS:
        std = logging.getLogger(name)
        if std.propagate or not std.handlers:
            continue
        if not all(_writes_to_console(handler) for handler in std.handlers):
            continue
        std.handlers = []
        std.propagate = True


def _writes_to_console(handler: logging.Handler) -> bool:
    """Whether `handler` is a plain stream handler on standard output or error: what
    uvicorn, fastapi-cli and gunicorn give the server's loggers."""
    consoles = (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__)
    return type(handler) is logging.StreamHandler and any(
        handler.stream is console for console in consoles if console is not None)


# The level ridtrace gave each chatty library logger, told apart from one the
# application set (which is kept).
_quieted: dict[str, int] = {}
