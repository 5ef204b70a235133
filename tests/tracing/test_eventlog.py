"""ridtrace's events: written straight to configure_logging's sinks, same lines as loguru."""

from __future__ import annotations

import asyncio
import io
import threading
from pathlib import Path
from typing import Any

import pytest
from loguru import logger

from ridtrace import configure_logging, shutdown_telemetry
from ridtrace.tracing import context
from ridtrace.tracing.context import RequestContext
from ridtrace.tracing.eventlog import EventLog
from tests.tracing.conftest import read_lines

events = EventLog(__name__)


def _emit_sample() -> None:
    token = context.enter(
        RequestContext("r-1", "a" * 32, "b" * 16, "c-1", parent_span_id="d" * 16)
    )
    try:
        events.info(
            "request.start", event="request.start", method="GET", absent=None,
            level="forged", note='"}{"level":"ERROR"', count=3, ratio=0.5, flag=True,
        )
        events.warning("request.end", event="request.end", request_id="explicit-wins")
    finally:
        context.leave(token)
    events.error("outside", event="response.unlinked")


def _without_time(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in line.items() if k != "time"} for line in lines]


def test_direct_lines_equal_the_lines_written_through_loguru(tmp_path: Path) -> None:
    direct, via_loguru = tmp_path / "direct.jsonl", tmp_path / "loguru.jsonl"
    handler = configure_logging(direct, service="svc", intercept_stdlib=False)
    _emit_sample()
    logger.remove(handler)
    configure_logging(via_loguru, service="svc", intercept_stdlib=False, events_via_loguru=True)
    _emit_sample()

    direct_lines, loguru_lines = read_lines(direct), read_lines(via_loguru)
    assert _without_time(direct_lines) == _without_time(loguru_lines)
    start, end, outside = direct_lines
    assert start["logger"] == __name__ and start["level"] == "INFO"
    assert (start["request_id"], start["x_request_id"], start["parent_span_id"]) == (
        "r-1", "c-1", "d" * 16,
    )  # fmt: skip
    assert start["_level"] == "forged" and "absent" not in start
    assert end["level"] == "WARN" and end["request_id"] == "explicit-wins"
    assert end["span_id"] == "b" * 16
    assert "request_id" not in outside and outside["level"] == "ERROR"
    for line in direct_lines:
        assert line["time"].endswith("Z") and len(line["time"].split(".")[1]) == 7


def test_an_event_named_for_another_module_keeps_that_name_through_loguru(
    tmp_path: Path,
) -> None:
    # request.start is written by ridtrace.tracing.observed under the name
    # ridtrace.tracing.middleware (worker.start by work_endpoint as ...worker, and so on):
    # through loguru the line was named after the module that wrote it instead, so its
    # logger changed with events_via_loguru.
    named = EventLog("ridtrace.tracing.middleware")
    direct, via_loguru = tmp_path / "direct.jsonl", tmp_path / "loguru.jsonl"
    handler = configure_logging(direct, service="svc", intercept_stdlib=False)
    named.info("request.start", event="request.start")
    logger.remove(handler)
    configure_logging(via_loguru, service="svc", intercept_stdlib=False, events_via_loguru=True)
    named.info("request.start", event="request.start")
    (direct_line,), (loguru_line,) = read_lines(direct), read_lines(via_loguru)
    assert direct_line["logger"] == loguru_line["logger"] == "ridtrace.tracing.middleware"


def test_other_handlers_see_events_only_when_they_go_through_loguru(tmp_path: Path) -> None:
    seen: list[str] = []
    logger.add(lambda message: seen.append(message.record["message"]), level="DEBUG")
    handler = configure_logging(tmp_path / "a.jsonl", intercept_stdlib=False)
    events.info("direct only", event="x")
    assert seen == [] and len(read_lines(tmp_path / "a.jsonl")) == 1

    logger.remove(handler)
    configure_logging(tmp_path / "b.jsonl", intercept_stdlib=False, events_via_loguru=True)
    events.info("through loguru", event="x")
    assert seen == ["through loguru"] and len(read_lines(tmp_path / "b.jsonl")) == 1


def test_without_configure_logging_events_reach_plain_loguru_handlers() -> None:
    records: list[dict[str, Any]] = []
    logger.add(lambda message: records.append(message.record), level="DEBUG")
    events.debug("dispatch.attempt", event="dispatch.attempt", attempt=1)
    (record,) = records
    assert record["name"] == __name__ and record["level"].name == "DEBUG"
    assert record["extra"] == {"event": "dispatch.attempt", "attempt": 1}


def test_without_configure_logging_events_carry_the_requests_ids(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The ids came only from configure_logging's patcher: an application with its own
    # loguru handlers alone got every request.start / request.end and deprecation WARN
    # without request_id, x_request_id, trace_id or span_id, nothing to join them by.
    import httpx
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from ridtrace import RequestTracingMiddleware

    async def hello(request: Request) -> PlainTextResponse:
        return PlainTextResponse("hello")

    # As in a process that never called configure_logging (an earlier test's call
    # left its patcher installed on loguru).
    monkeypatch.setattr(logger._core, "patcher", None)  # type: ignore[attr-defined]
    app = RequestTracingMiddleware(Starlette(routes=[Route("/", hello)]))
    records: list[dict[str, Any]] = []
    # ridtrace's events only: an earlier test's stdlib interception in this process
    # forwards asyncio's own DEBUG lines to loguru too.
    handler = logger.add(lambda message: records.append(message.record), level="DEBUG",
                         filter=lambda record: "event" in record["extra"])

    async def call() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.get("/", headers={"x-request-id": "mine", "request-id": "old"})

    try:
        request_id = asyncio.run(call()).headers["x-server-request-id"]
    finally:
        logger.remove(handler)
    events_seen = {r["extra"]["event"]: r["extra"] for r in records}
    assert set(events_seen) == {"deprecated_header", "request.start", "request.end"}
    for extra in events_seen.values():
        assert (extra["request_id"], extra["x_request_id"]) == (request_id, "mine"), extra
        assert len(extra["trace_id"]) == 32 and len(extra["span_id"]) == 16, extra


def test_removing_the_handler_stops_events_and_closes_the_file(tmp_path: Path) -> None:
    path = tmp_path / "app.jsonl"
    handler = configure_logging(path, intercept_stdlib=False)
    events.info("kept", event="x")
    logger.remove(handler)
    events.info("dropped", event="x")  # no sink left: loguru, which has no handler
    assert [line["message"] for line in read_lines(path)] == ["kept"]

    configure_logging(path, intercept_stdlib=False)
    logger.remove()  # removing every handler counts too
    events.info("dropped too", event="x")
    assert [line["message"] for line in read_lines(path)] == ["kept"]


def test_the_sink_level_applies_to_events(tmp_path: Path) -> None:
    path = tmp_path / "app.jsonl"
    configure_logging(path, level="WARNING", intercept_stdlib=False)
    events.info("request.start", event="request.start")
    events.warning("request.end", event="request.end")
    assert [line["message"] for line in read_lines(path)] == ["request.end"]


@pytest.mark.parametrize("via_loguru", [False, True], ids=["straight", "through loguru"])
def test_event_level_keeps_the_events_below_the_sinks_level(
    tmp_path: Path, via_loguru: bool
) -> None:
    # Through loguru (events_via_loguru=True), event_level did nothing: the handler's
    # WARNING let no request.start or request.end through, and analyze read no request.
    path = tmp_path / "app.jsonl"
    configure_logging(path, level="WARNING", event_level="INFO", intercept_stdlib=False,
                      events_via_loguru=via_loguru)
    events.debug("request.start", event="request.start")
    events.info("request.start", event="request.start")
    logger.info("an application's own line, below the sink's level")
    logger.warning("an application's warning")
    events.info("request.end", event="request.end")
    assert [line["message"] for line in read_lines(path)] == [
        "request.start", "an application's warning", "request.end"]


def test_every_sink_gets_its_own_service(tmp_path: Path) -> None:
    configure_logging(tmp_path / "a.jsonl", service="a", intercept_stdlib=False)
    stream = io.BytesIO()
    configure_logging(stream, service="b", intercept_stdlib=False)
    events.info("both", event="x")
    (line_a,) = read_lines(tmp_path / "a.jsonl")
    assert line_a["service"] == "a"
    assert b'"service":"b"' in stream.getvalue() and stream.getvalue().count(b"\n") == 1


class _BrokenStream(io.RawIOBase):
    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        raise OSError("disk full")


def test_a_failing_sink_never_reaches_the_caller(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(_BrokenStream(), intercept_stdlib=False)  # type: ignore[arg-type]
    events.info("request.end", event="request.end")  # must not raise
    assert "disk full" in capsys.readouterr().err


def test_events_and_loguru_records_from_many_threads_never_share_a_line(tmp_path: Path) -> None:
    path = tmp_path / "app.jsonl"
    configure_logging(path, intercept_stdlib=False)
    per_thread, threads = 300, 8
    barrier = threading.Barrier(threads)

    def write(index: int) -> None:
        barrier.wait()
        for n in range(per_thread):
            if n % 2:
                events.info("event", event="x", thread=index, n=n, pad="p" * 3000)
            else:
                logger.info("record", thread=index, n=n, pad="p" * 3000)

    workers = [threading.Thread(target=write, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    lines = read_lines(path)  # raises if any line is not exactly one JSON object
    assert sorted((line["thread"], line["n"]) for line in lines) == sorted(
        (i, n) for i in range(threads) for n in range(per_thread)
    )


def test_an_event_carrying_undecodable_or_hostile_text_stays_one_line(tmp_path: Path) -> None:
    path = tmp_path / "app.jsonl"
    configure_logging(path, intercept_stdlib=False)
    events.info("request.end", event="request.end", lone="\udcff", forged='"}\n{"level":"ERROR"')
    events.info("next", event="x")
    (line, following) = read_lines(path)
    assert line["lone"] == "\udcff" and line["forged"] == '"}\n{"level":"ERROR"'
    assert following["message"] == "next"


class _CountingStream(io.BytesIO):
    """A caller's stream that counts the writes it gets."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, data: Any) -> int:
        self.writes += 1
        return super().write(data)


def test_events_of_one_loop_turn_go_out_together_at_the_next_turn() -> None:
    stream = _CountingStream()
    configure_logging(stream, intercept_stdlib=False)
    seen: list[tuple[int, int]] = []

    async def serve() -> None:
        for n in range(3):
            events.info("request.end", event="request.end", n=n)
        seen.append((stream.writes, len(stream.getvalue())))  # still gathered
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        seen.append((stream.writes, stream.getvalue().count(b"\n")))

    asyncio.run(serve())
    assert seen == [(0, 0), (1, 3)]  # one write for the turn's three lines


def test_a_loguru_record_is_written_at_once_after_the_gathered_events(tmp_path: Path) -> None:
    path = tmp_path / "app.jsonl"
    configure_logging(path, intercept_stdlib=False)
    lines: list[list[str]] = []

    async def serve() -> None:
        events.info("first", event="x")
        logger.info("second")  # an application's line is never held back
        lines.append([line["message"] for line in read_lines(path)])
        events.info("third", event="x")

    asyncio.run(serve())
    assert lines == [["first", "second"]]
    assert [line["message"] for line in read_lines(path)] == ["first", "second", "third"]


def test_shutdown_telemetry_writes_gathered_events_before_the_loop_turns(tmp_path: Path) -> None:
    # uvicorn re-raises SIGTERM right after the lifespan's shutdown: the loop may never
    # turn again, so the lifespan (shutdown_telemetry) must write what is gathered.
    path = tmp_path / "app.jsonl"
    configure_logging(path, intercept_stdlib=False)
    counts: list[int] = []

    async def stop() -> None:
        events.info("request.end", event="request.end")
        counts.append(len(read_lines(path)))
        shutdown_telemetry()
        counts.append(len(read_lines(path)))

    asyncio.run(stop())
    assert counts == [0, 1]


def test_events_from_another_thread_are_written_at_once_in_order(tmp_path: Path) -> None:
    path = tmp_path / "app.jsonl"
    configure_logging(path, intercept_stdlib=False)
    lines: list[list[str]] = []

    async def serve() -> None:
        events.info("on the loop", event="x")  # gathered for the next turn
        # The loop does not turn while the thread writes: its line goes out at once,
        # after the gathered one.
        thread = threading.Thread(target=events.info, args=("from a thread",),
                                  kwargs={"event": "x"})
        thread.start()
        thread.join()
        lines.append([line["message"] for line in read_lines(path)])

    asyncio.run(serve())
    assert lines == [["on the loop", "from a thread"]]


def test_an_event_through_loguru_names_its_ids_whatever_a_patcher_sets(tmp_path: Path) -> None:
    # With events_via_loguru, an application's patcher that sets request_id (an old
    # middleware's client id) ran on ridtrace's own request.start / request.end too:
    # every request's events named the patcher's id, and analyze merged them into one.
    from ridtrace.tracing.logs import _patch_request_context

    path = tmp_path / "app.jsonl"
    configure_logging(path, service="svc", intercept_stdlib=False, events_via_loguru=True)
    logger.configure(patcher=lambda record: record["extra"].update(request_id="FROM-PATCHER"))
    try:
        _emit_sample()
        token = context.enter(RequestContext("r-2", "a" * 32, "e" * 16))
        try:
            try:
                raise RuntimeError("boom")
            except RuntimeError:
                events.exception("worker.error", event="worker.error")
        finally:
            context.leave(token)
    finally:
        logger.configure(patcher=_patch_request_context)
    start, end, outside, failed = read_lines(path)
    assert (start["request_id"], start["_request_id"]) == ("r-1", "FROM-PATCHER")
    assert end["request_id"] == "explicit-wins"  # the event's own, as named
    # No request: the event names no id, and the patcher's is kept apart as well.
    assert "request_id" not in outside and outside["_request_id"] == "FROM-PATCHER"
    assert (failed["request_id"], failed["span_id"]) == ("r-2", "e" * 16)
