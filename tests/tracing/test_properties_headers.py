"""Property tests of the header rules: client ids, deprecated headers, traceparent.

The middleware is driven with raw ASGI scopes, so header values can hold any bytes an
HTTP server might pass on (CR, LF, NUL, non-ASCII), not only what httpx would send.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loguru import logger
from opentelemetry.trace import get_current_span
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ridtrace.tracing import (
    RequestTracingMiddleware,
    format_traceparent,
    parse_traceparent,
    validate_client_id,
)
from ridtrace.tracing.deprecation import reset_warnings
from ridtrace.tracing.exchange import MAX_SHOWN_PATH
from ridtrace.tracing.identity import shown_text
from ridtrace.tracing.logs import configure_logging

PRINTABLE = re.compile(rb"^[\x20-\x7e]{1,128}$")
CONTROL = re.compile(rb"[\x00-\x09\x0b-\x1f\x7f]")  # anything but the line feed
DEPRECATED = ("x-dynamo-request-id", "request-id")
# Function-scoped fixtures (the log file) are shared by all examples on purpose.
SHARED_LOG = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


@given(st.one_of(st.binary(max_size=300), st.text(max_size=300)))
def test_client_id_validation_never_raises_and_only_passes_safe_text(raw: bytes | str) -> None:
    checked = validate_client_id(raw)
    if checked is None:
        return
    assert PRINTABLE.match(checked.encode("ascii"))
    assert checked == (raw.decode("ascii") if isinstance(raw, bytes) else raw)


@pytest.fixture
def shared_log(tmp_path: Path) -> Iterator[Path]:
    reset_warnings()
    logger.remove()
    path = tmp_path / "props.jsonl"
    configure_logging(path, service="props", level="DEBUG", intercept_stdlib=False)
    yield path
    logger.remove()


async def _app(scope: Any, receive: Any, send: Any) -> None:
    logger.info("handled")  # a line of the app's own, with the request's context
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def _call(headers: list[tuple[bytes, bytes]], path: str = "/p") -> list[tuple[bytes, bytes]]:
    """One request through the middleware; the response headers."""
    middleware = RequestTracingMiddleware(_app)
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": path, "headers": headers,
             "client": ("127.0.0.1", 1), "query_string": b"", "asgi": {"version": "3.0"}}
    asyncio.run(middleware(scope, receive, send))  # type: ignore[arg-type]
    return list(sent[0]["headers"])


def _new_lines(path: Path, offset: int) -> tuple[bytes, int]:
    data = path.read_bytes()
    return data[offset:], len(data)


_ANY_HEADER_VALUE = st.binary(max_size=160)
_NAMES = st.sampled_from(
    [b"x-request-id", b"user-agent", b"x-dynamo-request-id", b"request-id", b"accept"]
)


@SHARED_LOG
@given(st.lists(st.tuples(_NAMES, _ANY_HEADER_VALUE), max_size=6))
def test_no_control_character_reaches_a_header_or_a_log_line(
    shared_log: Path, headers: list[tuple[bytes, bytes]]
) -> None:
    offset = shared_log.stat().st_size
    response = _call(headers)
    for _, value in response:
        assert not CONTROL.search(value) and b"\n" not in value
    echoed = [v for n, v in response if n == b"x-request-id"]
    sent = [v for n, v in headers if n == b"x-request-id"]
    # Whitespace around a value is not part of it (RFC 9110).
    valid = [v.strip(b" \t") for v in sent if validate_client_id(v.strip(b" \t")) is not None]
    assert echoed == valid[:1]  # the first valid client id, or none
    written, _ = _new_lines(shared_log, offset)
    assert not CONTROL.search(written)
    lines = [orjson.loads(line) for line in written.splitlines()]
    assert [x.get("event") for x in lines if x.get("event", "").startswith("request.")] == [
        "request.start", "request.end"]
    # The first valid id wins; an invalid one is rejected wherever it stands (one
    # before the valid id was flagged, one after it was not).
    start = next(x for x in lines if x.get("event") == "request.start")
    assert start.get("x_request_id_rejected", False) is (len(valid) < len(sent))
    for line in lines:
        if "x_request_id" in line:
            assert line["x_request_id"].encode() == valid[0]
        if "user_agent" in line:
            assert PRINTABLE.match(line["user_agent"].encode())


# Any text a server may hand over as the percent-decoded path (/%0A%1B → "/\n\x1b"),
# sometimes far longer than any route.
_PATHS = st.one_of(
    st.text(max_size=200).map(lambda t: "/" + t),
    st.tuples(st.text(max_size=3), st.integers(1000, 20_000)).map(lambda p: "/" + p[0] * p[1]),
)


@SHARED_LOG
@given(_PATHS)
def test_the_path_reaches_a_log_line_capped_and_with_its_controls_escaped(
    shared_log: Path, path: str
) -> None:
    offset = shared_log.stat().st_size
    _call([], path)
    written, _ = _new_lines(shared_log, offset)
    assert not CONTROL.search(written)
    lines = [orjson.loads(line) for line in written.splitlines()]
    logged = [x["path"] for x in lines if x.get("event", "").startswith("request.")]
    assert len(logged) == 2 and logged[0] == logged[1]
    assert logged[0] == shown_text(path, MAX_SHOWN_PATH)
    assert logged[0].isprintable() and len(logged[0]) <= 10 * MAX_SHOWN_PATH + 32
    if path.isprintable() and len(path) <= MAX_SHOWN_PATH:
        assert logged[0] == path  # a clean path is logged as sent


@SHARED_LOG
@given(st.lists(st.tuples(_NAMES, _ANY_HEADER_VALUE), max_size=6))
def test_deprecated_headers_are_recorded_ignored_and_warned_once(
    shared_log: Path, headers: list[tuple[bytes, bytes]]
) -> None:
    offset = shared_log.stat().st_size
    _call(headers)
    written, _ = _new_lines(shared_log, offset)
    lines = [orjson.loads(line) for line in written.splitlines()]
    (end,) = [x for x in lines if x.get("event") == "request.end"]
    names = [n.decode() for n, _ in headers if n.decode() in DEPRECATED]
    expected = ",".join(dict.fromkeys(names)) or None
    assert end.get("deprecated_headers") == expected
    if not any(n == b"x-request-id" and validate_client_id(v.strip(b" \t")) for n, v in headers):
        assert "x_request_id" not in end  # never taken from a deprecated header
    everything = [orjson.loads(x) for x in shared_log.read_bytes().splitlines()]
    warned = [x["header"] for x in everything if x.get("event") == "deprecated_header"]
    assert len(warned) == len(set(warned))  # one WARN per header name per process


_HEX = "0123456789abcdefABCDEF"
_PIECES = st.text(st.sampled_from(_HEX + "-xz \t"), max_size=4)


@st.composite
def traceparents(draw: st.DrawFn) -> str:
    """Mostly well-formed headers, with every part sometimes a little wrong."""
    def hexes(n: int) -> str:
        return draw(st.one_of(
            st.text(st.sampled_from("0123456789abcdef"), min_size=n, max_size=n),
            st.just("0" * n),
            st.text(st.sampled_from(_HEX), min_size=n - 1, max_size=n + 1),
        ))
    parts = [hexes(2), hexes(32), hexes(16), hexes(2)]
    text = "-".join(parts)
    return draw(_PIECES.filter(lambda p: p.strip(" \t") == "")) + text + draw(_PIECES)


def _otel(value: str) -> tuple[str, str] | None:
    context = TraceContextTextMapPropagator().extract({"traceparent": value})
    span_context = get_current_span(context).get_span_context()
    if not span_context.is_valid:
        return None
    return format(span_context.trace_id, "032x"), format(span_context.span_id, "016x")


@given(st.one_of(traceparents(), st.text(max_size=80)))
def test_traceparent_parsing_agrees_with_opentelemetry(value: str) -> None:
    assert parse_traceparent(value) == _otel(value)


@given(st.integers(1, (1 << 128) - 1), st.integers(1, (1 << 64) - 1), st.booleans())
def test_formatted_traceparents_parse_back(trace_id: int, span_id: int, sampled: bool) -> None:
    ids = (format(trace_id, "032x"), format(span_id, "016x"))
    assert parse_traceparent(format_traceparent(*ids, sampled=sampled)) == ids
