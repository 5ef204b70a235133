"""The request's ids for logging set-ups that are not ridtrace's: a standard-library
filter for your own handlers and formatters, and a structlog processor.

`configure_logging` puts the ids on every line of the sink it adds. An application that
keeps its own standard-library handlers (a ``%(request_id)s`` format string,
python-json-logger, a log shipper's handler) or renders with structlog has no such sink;
these give its lines the same ids, read from the same context the middleware and the
gRPC interceptor set.
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any

from ridtrace.tracing.context import context_for_exception_line, line_context
from ridtrace.tracing.jsonline import CONTEXT_KEYS, request_ids_first

__all__ = ["FILLED_BY_FILTER", "RequestIdsFilter", "add_request_ids"]

FILLED_BY_FILTER = "_ridtrace_filled_ids"
"""Record attribute listing the keys :class:`RequestIdsFilter` set, so that
`configure_logging`'s own bridge can tell them from a caller's ``extra={...}`` fields.
Private by its leading ``_``: python-json-logger writes every other attribute a record
has beyond the standard ones, and wrote this list on each line."""


class RequestIdsFilter(logging.Filter):
    """Sets ``request_id``, ``x_request_id``, ``trace_id``, ``span_id`` and
    ``parent_span_id`` on every record it sees, for formatters to use.

    Outside a request (and for an id the request has not, such as ``x_request_id`` when
    the client sent none) the attribute is ``default``, so a format string that names it
    never fails. A field the caller passed in ``extra={...}`` is kept. A record logging
    an exception that escaped a request (uvicorn's ``Exception in ASGI application``,
    written after the request's context is gone) gets that request's ids. Add it to a
    handler (``handler.addFilter(RequestIdsFilter())``, or ``"()":
    "ridtrace.tracing.RequestIdsFilter"`` in a ``dictConfig``): a handler's filters see
    the records of every logger that propagates to it, a logger's see only its own.
    """

    def __init__(self, name: str = "", *, default: str | None = None) -> None:
        super().__init__(name)
        self.default = default

    def filter(self, record: logging.LogRecord) -> bool:
        escaped = record.exc_info[1] if record.exc_info else None
        ctx = context_for_exception_line(escaped) or line_context()
        filled = []
        for key in CONTEXT_KEYS:
            if key in record.__dict__:
                continue
            value = None if ctx is None else getattr(ctx, key)
            setattr(record, key, self.default if value is None else value)
            filled.append(key)
        if filled:
            setattr(record, FILLED_BY_FILTER, (*getattr(record, FILLED_BY_FILTER, ()), *filled))
        return True


def add_request_ids(
    logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: the request's ids into the event dict, before the renderer
    (``structlog.configure(processors=[..., add_request_ids, JSONRenderer()])``). Only
    the ids the request has are added; a value the event holds under one of their keys
    that differs from the request's, or under one the request has not (a client id
    ridtrace rejected, bound by an old middleware with ``bind_contextvars``), is kept as
    ``_request_id`` & co, as on `configure_logging`'s lines."""
    ctx = line_context()
    if ctx is not None:
        request_ids_first(event_dict, ctx)
    return event_dict
