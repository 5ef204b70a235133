"""`RequestIdsFilter` and `add_request_ids`: the request's ids for logging set-ups that
are not ridtrace's sink (the end-to-end run under uvicorn is test_stdlib_ids_e2e.py)."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from ridtrace import RequestIdsFilter, add_request_ids, configure_logging
from ridtrace.tracing import context
from ridtrace.tracing.context import RequestContext
from tests.tracing.conftest import read_lines

REQUEST = RequestContext(request_id="r-1", trace_id="a" * 32, span_id="b" * 16,
                         x_request_id="c-1")


@pytest.fixture
def in_request() -> Iterator[RequestContext]:
    token = context.enter(REQUEST)
    yield REQUEST
    context.leave(token)


def _own_handler(logger_name: str, fmt: str, **options: str) -> tuple[logging.Logger, io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(fmt))
    handler.addFilter(RequestIdsFilter(**options))
    log = logging.getLogger(logger_name)
    log.handlers, log.propagate = [handler], False
    log.setLevel(logging.INFO)
    return log, stream


def test_a_format_string_names_the_ids_inside_and_outside_a_request() -> None:
    log, stream = _own_handler("own.format", "%(request_id)s %(x_request_id)s %(span_id)s %(message)s",
                               default="-")
    token = context.enter(REQUEST)
    try:
        log.info("inside")
    finally:
        context.leave(token)
    log.info("outside")
    assert stream.getvalue().splitlines() == [f"r-1 c-1 {'b' * 16} inside", "- - - outside"]


def test_an_id_the_caller_passed_in_extra_is_kept(in_request: RequestContext) -> None:
    log, stream = _own_handler("own.extra", "%(request_id)s %(trace_id)s")
    log.info("mine", extra={"request_id": "callers"})
    assert stream.getvalue() == f"callers {'a' * 32}\n"


def test_the_json_sink_does_not_take_the_filters_ids_for_a_callers_fields(
    tmp_path: Path, in_request: RequestContext,
) -> None:
    """An application's own handler with the filter, and configure_logging's bridge on
    the root logger: the record reaching the bridge carries the ids the filter set. They
    were written again as the caller's ``_request_id``, ``_trace_id`` ... fields."""
    path = tmp_path / "both.jsonl"
    configure_logging(path, service="svc", level="INFO")
    try:
        log, stream = _own_handler("own.both", "%(request_id)s")
        log.propagate = True
        log.info("to both")
    finally:
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)
    (line,) = read_lines(path)
    assert stream.getvalue() == "r-1\n"
    assert (line["request_id"], line["x_request_id"]) == ("r-1", "c-1")
    assert not [key for key in line if key.startswith("_") or key.startswith("ridtrace")], line


def test_the_structlog_processor_adds_the_ids_the_request_has(in_request: RequestContext) -> None:
    event = add_request_ids(None, "info", {"event": "paid", "trace_id": "a" * 32})
    assert event == {"event": "paid", "request_id": "r-1", "x_request_id": "c-1",
                     "trace_id": "a" * 32, "span_id": REQUEST.span_id}


def test_the_structlog_processor_keeps_an_events_own_ids_apart() -> None:
    # An old middleware's bind_contextvars(x_request_id=raw header): a 200-character id
    # ridtrace rejected, or "-" for a request that sent none, was the line's x_request_id,
    # and `trace -` found the request by it.
    ctx = RequestContext(request_id="r-2", trace_id="b" * 32, span_id="c" * 16)
    token = context.enter(ctx)
    try:
        event = add_request_ids(None, "info", {"event": "hello", "x_request_id": "-",
                                               "request_id": "-", "span_id": "c" * 16})
    finally:
        context.leave(token)
    assert event == {"event": "hello", "_x_request_id": "-", "_request_id": "-",
                     "request_id": "r-2", "trace_id": "b" * 32, "span_id": "c" * 16}


def test_the_structlog_processor_adds_nothing_outside_a_request() -> None:
    assert add_request_ids(None, "info", {"event": "boot"}) == {"event": "boot"}


def test_a_json_formatter_of_extra_attributes_sees_only_the_ids(in_request: RequestContext) -> None:
    # python-json-logger's JsonFormatter (the docs' example of a handler of your own)
    # writes every attribute a record has beyond the standard ones, except those
    # starting with "_". The filter's own bookkeeping was written on every line, as
    # "ridtrace_filled_ids": ["request_id", "x_request_id", …].
    standard = {*vars(logging.makeLogRecord({})), "message", "asctime"}  # and its formatter's
    log, _ = _own_handler("ids.extra", "%(message)s")
    seen: list[logging.LogRecord] = []
    log.handlers[0].addFilter(lambda record: seen.append(record) or True)
    log.info("charged", extra={"amount": 3})
    written = {k for k in vars(seen[0]) if k not in standard and not k.startswith("_")}
    assert written == {"amount", "request_id", "x_request_id", "trace_id", "span_id",
                       "parent_span_id"}
