"""The JSON-lines sink: one valid object per line whatever the record holds."""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import io
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from loguru import logger

from ridtrace import configure_logging
from ridtrace.tracing import context
from ridtrace.tracing.context import RequestContext
from ridtrace.tracing.logs import _patch_request_context
from tests.tracing.conftest import read_lines


@contextlib.contextmanager
def _stdlib_logging_to(path: Path) -> Iterator[None]:
    """Standard-library logging configured to write to `path` for the block, then reset."""
    configure_logging(path, service="svc", level="INFO")
    try:
        yield
    finally:
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)


def test_nothing_is_added_to_loguru_at_import() -> None:
    import importlib

    import ridtrace.tracing.logs as logs_module

    logger.remove()
    importlib.reload(logs_module)
    stream = io.StringIO()
    probe = logger.add(stream, format="{message}")
    logger.info("only mine")
    logger.remove(probe)
    assert stream.getvalue() == "only mine\n"


def test_lines_carry_context_ids_and_escape_hostile_values(log_file: Path) -> None:
    token = context.enter(
        RequestContext(request_id="r-1", trace_id="a" * 32, span_id="b" * 16, x_request_id="c-1")
    )
    try:
        logger.info("multi\nline \x00 message", note='"}{"level":"ERROR"', lone="\udcff")
        logger.info("reserved keys stay ours", level="forged", time="forged")
    finally:
        context.leave(token)
    logger.info("outside a request")
    first, second, third = read_lines(log_file)
    assert (first["request_id"], first["x_request_id"], first["trace_id"], first["span_id"]) == (
        "r-1", "c-1", "a" * 32, "b" * 16,
    )  # fmt: skip
    assert first["message"] == "multi\nline \x00 message"
    assert first["note"] == '"}{"level":"ERROR"'
    assert second["level"] == "INFO" and second["_level"] == "forged"
    assert "request_id" not in third
    assert len(log_file.read_text().splitlines()) == 3


def test_stdlib_logging_is_routed_with_the_same_shape(tmp_path: Path) -> None:
    path = tmp_path / "std.jsonl"
    with _stdlib_logging_to(path):
        logging.getLogger("uvicorn.error").warning("from the standard library")
    (line,) = read_lines(path)
    assert (line["logger"], line["level"], line["service"]) == ("uvicorn.error", "WARN", "svc")
    assert line["schema"] == "ridtrace/1" and line["time"].endswith("Z")


def test_time_is_utc_with_microseconds(log_file: Path) -> None:
    logger.info("tick")
    (line,) = read_lines(log_file)
    stamp = line["time"]
    assert stamp.endswith("Z") and len(stamp.split(".")[1]) == 7
    json.dumps(line)


class _NoEquality:
    """A value like a NumPy array: comparing it raises."""

    def __eq__(self, other: object) -> bool:
        raise ValueError("truth value is ambiguous")

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        return "no-equality"


def test_values_that_refuse_comparison_are_still_written(log_file: Path) -> None:
    logger.info("odd values", odd=_NoEquality(), absent=None)
    (line,) = read_lines(log_file)
    assert line["odd"] == "no-equality" and "absent" not in line


def test_a_text_stream_is_a_sink_too() -> None:
    # sys.stdout and io.StringIO used to be accepted, then every write failed with
    # TypeError (bytes to a text stream) and loguru reported each failure.
    from ridtrace.tracing.eventlog import EventLog

    stream = io.StringIO()
    handler = configure_logging(stream, service="txt", intercept_stdlib=False)
    logger.info("café")
    EventLog("tests").info("request.start", event="request.start")
    logger.remove(handler)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(x["message"], x["service"]) for x in lines] == [("café", "txt"), ("request.start", "txt")]


def test_a_sink_that_is_no_path_or_stream_is_refused_at_once() -> None:
    for wrong in (42, b"app.jsonl", object(), print):
        try:
            configure_logging(wrong, intercept_stdlib=False)  # type: ignore[arg-type]
        except TypeError as exc:
            assert "file path" in str(exc) and type(wrong).__name__ in str(exc)
        else:
            raise AssertionError(f"{wrong!r} accepted")


def test_each_sink_gets_the_standard_librarys_lines_down_to_its_own_level() -> None:
    # The root logger is shared: it was set to the last call's level, so a DEBUG file
    # lost every standard-library DEBUG and INFO line once a WARNING console was added,
    # and level="TRACE" (not a standard-library name) let only INFO and above through.
    verbose, quiet, trace = io.StringIO(), io.StringIO(), io.StringIO()
    try:
        configure_logging(verbose, service="s", level="DEBUG")
        configure_logging(quiet, service="s", level="WARNING")
        library = logging.getLogger("some.library")
        library.debug("debug")
        library.info("info")
        library.warning("warning")
        logger.remove()
        configure_logging(trace, service="s", level="TRACE")
        library.debug("debug under trace")
    finally:
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)

    def messages(stream: io.StringIO) -> list[str]:
        return [json.loads(line)["message"] for line in stream.getvalue().splitlines()]

    assert messages(verbose) == ["debug", "info", "warning"]
    assert messages(quiet) == ["warning"]
    assert messages(trace) == ["debug under trace"]


def test_a_patcher_the_application_set_is_kept() -> None:
    # loguru holds one patcher and configure() replaces it: configure_logging dropped
    # the application's own (here, a host name) from every line, silently.
    stream = io.StringIO()
    logger.configure(patcher=lambda record: record["extra"].update(host="h-1"))
    try:
        configure_logging(stream, service="s", intercept_stdlib=False)
        configure_logging(io.StringIO(), service="s", intercept_stdlib=False)  # twice
        token = context.enter(RequestContext(request_id="r-1", trace_id="a" * 32,
                                             span_id="b" * 16))  # fmt: skip
        try:
            logger.info("patched")
        finally:
            context.leave(token)
    finally:
        logger.configure(patcher=_patch_request_context)
    (line,) = [json.loads(x) for x in stream.getvalue().splitlines()]
    assert (line["host"], line["request_id"]) == ("h-1", "r-1")


def test_a_configured_default_for_an_id_never_takes_the_place_of_the_requests(
    tmp_path: Path,
) -> None:
    # loguru's documented way to let a console format name {extra[request_id]} outside
    # requests is a default in logger.configure(extra=...). That default won over the
    # request's ids on every line: the JSON line of a request said request_id "-".
    console = io.StringIO()
    path = tmp_path / "app.jsonl"
    logger.configure(extra={"request_id": "-", "x_request_id": "-"})
    try:
        logger.add(console, format="{extra[request_id]} {extra[x_request_id]} {message}")
        with _stdlib_logging_to(path):
            for client_id in ("c-1", None):
                token = context.enter(RequestContext(
                    request_id=f"r-{client_id}", trace_id="a" * 32, span_id="b" * 16,
                    x_request_id=client_id,
                ))  # fmt: skip
                try:
                    logger.info("app line")
                    logging.getLogger("lib").warning("library line")
                finally:
                    context.leave(token)
            logger.info("outside a request")
    finally:
        logger.configure(extra={})
    ids = [(x.get("request_id"), x.get("x_request_id")) for x in read_lines(path)]
    assert ids == [("r-c-1", "c-1")] * 2 + [("r-None", None)] * 2 + [(None, None)]
    assert console.getvalue().splitlines() == [
        "r-c-1 c-1 app line", "r-c-1 c-1 library line",
        "r-None - app line", "r-None - library line", "- - outside a request",
    ]  # the application's own format keeps its default where there is no id


def test_a_patcher_the_application_sets_afterwards_does_not_take_the_ids_away(
    tmp_path: Path,
) -> None:
    # loguru holds one patcher: logger.configure(patcher=...) after configure_logging
    # replaced ridtrace's, and every line (the app's, the standard library's) lost its ids.
    path = tmp_path / "app.jsonl"
    try:
        with _stdlib_logging_to(path):
            logger.configure(patcher=lambda record: record["extra"].update(host="h-1"))
            token = context.enter(RequestContext(request_id="r-1", trace_id="a" * 32,
                                                 span_id="b" * 16, x_request_id="c-1"))
            try:
                logger.info("app line")
                logging.getLogger("lib").warning("library line")
            finally:
                context.leave(token)
            logger.info("outside a request")
    finally:
        logger.configure(patcher=_patch_request_context)
    lines = read_lines(path)
    assert [(x["host"], x.get("request_id"), x.get("x_request_id"), x.get("span_id"))
            for x in lines] == [("h-1", "r-1", "c-1", "b" * 16)] * 2 + [("h-1", None, None, None)]


def _in_request(*log: Callable[[], None]) -> None:
    token = context.enter(RequestContext(request_id="r-1", trace_id="a" * 32,
                                         span_id="b" * 16, x_request_id="c-1"))
    try:
        for call in log:
            call()
    finally:
        context.leave(token)


_SERVER_IDS = {"request_id": "r-1", "x_request_id": "c-1", "trace_id": "a" * 32,
               "span_id": "b" * 16}


def test_an_id_a_per_call_patch_sets_never_takes_the_servers_place(log_file: Path) -> None:
    # loguru runs a logger.patch(...) after its patcher: an old middleware's client id
    # set there was written as the line's request_id, the server's id nowhere.
    def client_id(record: Any) -> None:
        record["extra"].update(request_id="probe-1")

    _in_request(lambda: logger.patch(client_id).info("patched per call"))
    (line,) = read_lines(log_file)
    assert {k: line.get(k) for k in _SERVER_IDS} == _SERVER_IDS
    assert line["_request_id"] == "probe-1"


def test_a_patcher_set_afterwards_that_names_an_id_never_takes_the_servers_place(
    tmp_path: Path,
) -> None:
    # The old pattern: the application's patcher, configured after configure_logging,
    # copies the client's x-request-id into request_id. Every line, the standard
    # library's too, read request_id "probe-1", with no trace_id nor span_id:
    # `ridtrace trace` of the server's id found none of them.
    path = tmp_path / "app.jsonl"
    try:
        with _stdlib_logging_to(path):
            logger.configure(patcher=lambda record: record["extra"].update(request_id="probe-1"))
            _in_request(lambda: logger.info("app line"),
                        lambda: logging.getLogger("lib").warning("library line"))
    finally:
        logger.configure(patcher=_patch_request_context)
    lines = read_lines(path)
    assert [{k: x.get(k) for k in _SERVER_IDS} for x in lines] == [_SERVER_IDS] * 2
    assert [x["_request_id"] for x in lines] == ["probe-1"] * 2


def test_a_field_and_its_underscored_name_both_keep_their_values(tmp_path: Path) -> None:
    # A reserved or id name is written as `_name`; one the application also bound
    # under `_name` was overwritten, its value gone.
    path = tmp_path / "app.jsonl"
    with _stdlib_logging_to(path):
        logger.bind(_time="a", time="b").info("times")
        _in_request(lambda: logger.bind(_request_id="u1", request_id="u2").info("ids"))
        logging.getLogger("lib").warning(
            "stack", stack_info=True, extra={"stack": "s", "_stack": "t"})
        logging.getLogger("lib").warning(
            "ids", extra={"request_id": "e1", "_request_id": "e2"})
    times, ids, stack, extra_ids = read_lines(path)
    assert (times["_time"], times["__time"]) == ("a", "b")
    assert (ids["request_id"], ids["_request_id"], ids["__request_id"]) == ("r-1", "u1", "u2")
    assert (stack["_stack"], stack["__stack"]) == ("t", "s")
    assert stack["stack"].startswith("Stack (most recent call last)")
    assert (extra_ids["_request_id"], extra_ids["__request_id"]) == ("e2", "e1")


@pytest.mark.parametrize("level", ["WARN", "warn", "warning", "Warning"])
def test_warn_is_the_warning_level_in_any_case(level: str) -> None:
    # WARN is how the log schema (and Dynamo) spell the level; loguru only knew WARNING.
    out = io.StringIO()
    try:
        configure_logging(out, service="s", level=level)
        logger.info("not written")
        logger.warning("written")
    finally:
        logger.remove()
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)
    assert [json.loads(x)["message"] for x in out.getvalue().splitlines()] == ["written"]


@pytest.mark.parametrize("levels", [
    {"level": "verbose"}, {"event_level": "chatty"}, {"level": -1}, {"event_level": -5},
])
def test_a_level_refused_leaves_no_log_file_behind(
    tmp_path: Path, levels: dict[str, str | int]
) -> None:
    # The sink was opened first: `serve --log-level bad` exited 2 and left the log's
    # directories and an empty log file made for a logger that never started.
    log = tmp_path / "typo" / "app.jsonl"
    with pytest.raises(ValueError):
        configure_logging(log, service="s", **levels)  # type: ignore[arg-type]
    assert not (tmp_path / "typo").exists()


def test_custom_levels_are_written_as_the_schemas_level_names(tmp_path: Path) -> None:
    # The schema's levels are TRACE..CRITICAL; a level an application adds (loguru's
    # logger.level("NOTICE", no=25), the standard library's addLevelName(35, ...)) was
    # written under its own name or as "Level 35", which no reader of the contract knows.
    path = tmp_path / "levels.jsonl"
    configure_logging(path, service="svc", level=1)
    logger.level("NOTICE_QA", no=25)
    logging.addLevelName(35, "ALERT_QA")
    try:
        logger.log("NOTICE_QA", "loguru custom")
        logging.getLogger("app").log(35, "stdlib custom")
        logging.getLogger("app").log(45, "stdlib unnamed")
        logger.log(3, "below trace")
        logger.success("success")
    finally:
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)
    levels = {line["message"]: line["level"] for line in read_lines(path)}
    assert levels == {
        "loguru custom": "INFO", "stdlib custom": "WARN", "stdlib unnamed": "ERROR",
        "below trace": "TRACE", "success": "INFO",
    }  # fmt: skip


def test_object_and_array_values_are_written_as_json_text(log_file: Path) -> None:
    # The schema promises flat keys: a dict or list an application binds was written
    # as a nested object / array, a column of another type for every reader.
    logger.bind(data={"a": {"b": 1}}, items=[1, "x"], pair=(1, 2), tags={"t"}).info("structured")
    (line,) = read_lines(log_file)
    assert (line["data"], line["items"], line["pair"]) == ('{"a":{"b":1}}', '[1,"x"]', "[1,2]")
    assert line["tags"] == '["t"]'
    assert not any(isinstance(value, (dict, list)) for value in line.values())


@dataclasses.dataclass
class _User:
    id: int
    plan: str


class _Shape(enum.Enum):
    SQUARE = ("sides", 4)


def test_a_dataclass_or_an_enum_of_an_object_is_written_as_json_text_too(
    tmp_path: Path,
) -> None:
    # orjson writes a dataclass (and an enum by its value) as an object: a dataclass an
    # application logged (logger.info("created", user=user)) made the line nested.
    path = tmp_path / "app.jsonl"
    with _stdlib_logging_to(path):
        logger.info("created", user=_User(1, "pro"), shape=_Shape.SQUARE, kind=_User)
        logging.getLogger("lib").info("created", extra={"user": _User(2, "free")})
    first, second = read_lines(path)
    assert (first["user"], first["shape"]) == ('{"id":1,"plan":"pro"}', '["sides",4]')
    assert first["kind"] == str(_User)  # the class itself is no object JSON writes
    assert second["user"] == '{"id":2,"plan":"free"}'


def test_values_no_json_encoder_takes_as_they_are_are_still_written(
    log_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A dict keyed by pairs (a routing table, a Counter of pairs) or holding itself: both
    # encoders refused it, and loguru dropped the whole line with a "Logging error".
    cyclic: dict[str, object] = {"name": "loop"}
    cyclic["self"] = cyclic
    logger.info("pairs", by_pair={("gpu", 0): 3, 7: "int key"})
    logger.info("cyclic", graph=cyclic)
    pairs, looped = read_lines(log_file)
    assert json.loads(pairs["by_pair"]) == {"('gpu', 0)": 3, "7": "int key"}
    assert looped["message"] == "cyclic" and "loop" in looped["graph"]
    assert "Logging error" not in capsys.readouterr().err


class _Detached:
    """An ORM object detached from its session: its ``str()`` and ``repr()`` raise."""

    def __str__(self) -> str:
        raise RuntimeError("Instance is not bound to a Session")

    __repr__ = __str__


def test_a_value_whose_str_raises_is_written_not_the_line_lost(
    log_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Both encoders' fallback called the same str(): loguru dropped the line with a
    # "Logging error" traceback on stderr.
    logger.bind(user=_Detached()).info("user logged in")
    (line,) = read_lines(log_file)
    assert line["user"] == "<_Detached str() failed>"
    assert "Logging error" not in capsys.readouterr().err


def test_exception_lines_carry_the_traceback_and_only_a_real_exception(log_file: Path) -> None:
    def fail() -> None:
        raise ValueError("bad\nvalue")

    try:
        fail()
    except ValueError:
        logger.exception("caught")
    logger.opt(exception=True).warning("no exception in flight")
    caught, plain = read_lines(log_file)
    assert caught["exception"] == "ValueError: bad\nvalue"
    assert caught["traceback"].startswith("Traceback (most recent call last):\n")
    assert "in fail" in caught["traceback"] and caught["traceback"].endswith("value\n")
    # Outside an except block loguru records "no exception": it was written "Exception: None".
    assert "exception" not in plain and "traceback" not in plain


class _UnprintableError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text for this exception")


def test_an_exception_whose_str_raises_is_still_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # str() of the exception raised inside the sink: loguru dropped the line and
    # reported a "Logging error" on stderr instead, for loguru and stdlib lines alike.
    path = tmp_path / "unprintable.jsonl"
    with _stdlib_logging_to(path):
        try:
            raise _UnprintableError
        except _UnprintableError:
            logger.exception("loguru line")
            logging.getLogger("lib").exception("stdlib line")
    lines = read_lines(path)
    assert [x["message"] for x in lines] == ["loguru line", "stdlib line"]
    for line in lines:
        assert line["exception"] == "_UnprintableError: <exception str() failed>"
        assert line["traceback"].endswith("_UnprintableError: <exception str() failed>\n")
    assert "Logging error" not in capsys.readouterr().err


def test_stdlib_extra_fields_reach_the_line(tmp_path: Path) -> None:
    # logging's extra={...} is how standard-library code adds fields to a record; the
    # bridge to loguru dropped them, so a library's structured fields never reached a line.
    path = tmp_path / "extra.jsonl"
    with _stdlib_logging_to(path):
        logging.getLogger("lib").warning("with fields", extra={"user": "u1", "attempt": 2,
                                                               "tags": ["a"], "time": "t",
                                                               "request_id": "lib-id"})
    (line,) = read_lines(path)
    assert (line["user"], line["attempt"], line["tags"], line["_time"]) == ("u1", 2, '["a"]', "t")
    # A library's own id never passes for the server-minted request_id.
    assert "request_id" not in line and line["_request_id"] == "lib-id"
    assert not {"args", "msg", "exc_info", "levelno", "funcName"} & set(line)


def test_a_stdlib_records_stack_reaches_the_line(tmp_path: Path) -> None:
    # logging's stack_info=True asks for the caller's stack (the standard library's own
    # formatter appends it to the message): the bridge dropped it, so the line said a
    # library warned but not from where.
    path = tmp_path / "stack.jsonl"

    def deep_in_a_library() -> None:
        logging.getLogger("lib").warning("who called me?", stack_info=True)

    with _stdlib_logging_to(path):
        deep_in_a_library()
    (line,) = read_lines(path)
    assert line["message"] == "who called me?"
    assert line["stack"].startswith("Stack (most recent call last):\n")
    assert "in deep_in_a_library" in line["stack"]


def test_an_applications_exception_traceback_and_stack_fields_are_kept_apart(
    tmp_path: Path,
) -> None:
    # The schema adds `exception` and `traceback` to a line that logs an exception, and
    # `stack` to a stack_info record: an application field of one of these names was
    # overwritten (or overwrote the stack), or made a line look like an exception's.
    path = tmp_path / "fields.jsonl"
    with _stdlib_logging_to(path):
        try:
            raise ZeroDivisionError("division by zero")
        except ZeroDivisionError:
            logger.bind(exception="QuotaExceeded", traceback="tb-42").exception("loguru")
            logging.getLogger("lib").error("stdlib", exc_info=True, extra={
                "exception": "QuotaExceeded", "traceback": "tb-42"})
        logger.info("no exception", exception="QuotaExceeded")
        logging.getLogger("lib").info("stack", stack_info=True, extra={"stack": "mine"})
    with_exc, stdlib_exc, plain, stack = read_lines(path)
    for line in (with_exc, stdlib_exc):
        assert line["exception"] == "ZeroDivisionError: division by zero"
        assert line["traceback"].startswith("Traceback (most recent call last):")
        assert (line["_exception"], line["_traceback"]) == ("QuotaExceeded", "tb-42")
    assert "exception" not in plain and plain["_exception"] == "QuotaExceeded"
    assert stack["stack"].startswith("Stack (most recent call last):")
    assert stack["_stack"] == "mine"


def test_uvicorns_terminal_copy_of_a_message_stays_off_the_line(tmp_path: Path) -> None:
    # uvicorn logs its start-up and shutdown lines with extra={"color_message": ...}, for
    # its own coloured console formatter: every `ridtrace serve` log began with a field
    # holding the unformatted template and raw ANSI escapes ("[\x1b[36m%d\x1b[0m]").
    path = tmp_path / "uvicorn.jsonl"
    with _stdlib_logging_to(path):
        logging.getLogger("uvicorn.error").info(
            "Started server process [%d]", 42,
            extra={"color_message": "Started server process [\x1b[36m%d\x1b[0m]"},
        )
    (line,) = read_lines(path)
    assert line["message"] == "Started server process [42]"
    assert "color_message" not in line


def test_a_malformed_stdlib_log_call_is_reported_not_raised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The standard library's own handlers report a record that cannot be rendered on
    # stderr ("--- Logging error ---") and go on; the bridge raised it into the code
    # that logged, so one library's bad log call turned a request into a 500.
    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("no text")

    path = tmp_path / "bad.jsonl"
    with _stdlib_logging_to(path):
        logging.getLogger("lib").warning("count %d", "not a number")
        logging.getLogger("lib").warning("value %s", Unprintable())
        logging.getLogger("lib").warning("still logging")
    assert [x["message"] for x in read_lines(path)] == ["still logging"]
    assert capsys.readouterr().err.count("--- Logging error ---") == 2


def test_configuring_the_same_file_or_stream_again_replaces_its_sink(tmp_path: Path) -> None:
    # An app factory run twice (tests, a module imported under two names) called
    # configure_logging twice for one file: two sinks, every line written twice.
    path = tmp_path / "app.jsonl"
    stream = io.StringIO()
    other = io.StringIO()
    configure_logging(path, service="first", intercept_stdlib=False)
    configure_logging(stream, service="s", intercept_stdlib=False)
    configure_logging(tmp_path / "." / "app.jsonl", service="second", intercept_stdlib=False)
    configure_logging(stream, service="s", intercept_stdlib=False)
    configure_logging(other, service="s", intercept_stdlib=False)  # another stream: kept
    logger.info("once")
    (line,) = read_lines(path)
    assert (line["message"], line["service"]) == ("once", "second")
    assert stream.getvalue().count('"once"') == 1
    assert other.getvalue().count('"once"') == 1


def test_calls_from_threads_at_once_leave_one_sink_per_file(tmp_path: Path) -> None:
    # Threads configuring one file at the same moment each found nothing to replace
    # and each added its sink: 4-5 sinks of 8 calls, every line written 4-5 times.
    import threading

    from ridtrace.tracing.sinks import event_sinks

    for attempt in range(20):
        path = tmp_path / f"app-{attempt}.jsonl"
        start = threading.Barrier(8)

        def configure(path: Path = path, start: threading.Barrier = start) -> None:
            start.wait()
            configure_logging(path, service="threads", intercept_stdlib=False)

        threads = [threading.Thread(target=configure) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        logger.info("once")
        assert [x["message"] for x in read_lines(path)] == ["once"], attempt
        assert len(event_sinks()) == 1
        logger.remove()


def test_standard_error_and_its_buffer_are_one_sink(capfd: pytest.CaptureFixture[str]) -> None:
    # None means sys.stderr's buffer; sys.stderr itself was another stream to the
    # check, and every line came out twice.
    import sys

    configure_logging(None, service="first", intercept_stdlib=False)
    configure_logging(sys.stderr, service="second", intercept_stdlib=False)
    logger.info("once")
    lines = [json.loads(x) for x in capfd.readouterr().err.splitlines() if x.startswith("{")]
    assert [(x["message"], x["service"]) for x in lines] == [("once", "second")]


def test_a_librarys_message_holding_a_clients_header_is_capped_and_escaped(
    tmp_path: Path,
) -> None:
    # OpenTelemetry's baggage propagator logs an over-long baggage header whole: any
    # client could put up to 64 KiB (the header limit) into a WARN line per request,
    # obs-text bytes arriving as C1 control characters included.
    import asyncio

    import httpx
    from starlette.responses import PlainTextResponse

    from ridtrace import RequestTracingMiddleware

    async def app(scope: dict, receive: object, send: object) -> None:  # type: ignore[type-arg]
        await PlainTextResponse("ok")(scope, receive, send)  # type: ignore[arg-type]

    path = tmp_path / "app.jsonl"
    configure_logging(path, service="svc", level="INFO")
    baggage = b"k=" + b"v\x9b" * 10_000

    async def call() -> int:
        transport = httpx.ASGITransport(app=RequestTracingMiddleware(app))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return (await client.get("/", headers={"baggage": baggage})).status_code

    try:
        assert asyncio.run(call()) == 200
    finally:
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)
        logger.remove()
    warned = [x for x in read_lines(path) if x["logger"].startswith("opentelemetry.baggage")]
    assert len(warned) == 1
    message = warned[0]["message"]
    assert message.startswith("Baggage header `k=v\\x9bv\\x9b")
    # The first 4096 characters, each C1 byte written as its 4-character escape.
    assert message.endswith("...[20075 chars]") and len(message) < 4096 * 3
    assert "\x9b" not in message


def test_a_librarys_ordinary_message_keeps_its_layout(tmp_path: Path) -> None:
    path = tmp_path / "std.jsonl"
    with _stdlib_logging_to(path):
        logging.getLogger("some.library").warning("two lines\n\tand a tab, caf\u00e9")
    (line,) = read_lines(path)
    assert line["message"] == "two lines\n\tand a tab, caf\u00e9"


def test_an_applications_own_value_of_an_id_gives_way_to_the_requests(log_file: Path) -> None:
    # An old middleware that contextualized the client's x-request-id as request_id (the
    # pattern ridtrace replaces) wrote the client's id in the server's place on every
    # app line: two callers sharing it shared their lines' id, and a search by the id the
    # client got back (x-server-request-id) missed them. A stdlib extra was renamed.
    token = context.enter(RequestContext(request_id="r-1", trace_id="a" * 32,
                                         span_id="b" * 16, x_request_id="c-1"))  # fmt: skip
    try:
        logger.bind(request_id="c-1").info("bound")
        with logger.contextualize(request_id="c-1", span_id="0" * 16):
            logger.info("contextualized")
        logger.info("keyword", trace_id="f" * 32)
        logger.bind(request_id="r-1", x_request_id="c-1").info("the same ids")
    finally:
        context.leave(token)
    logger.bind(request_id="job-7").info("outside a request")
    bound, contextualized, keyword, same, outside = read_lines(log_file)
    for line in (bound, contextualized, keyword, same):
        assert (line["request_id"], line["x_request_id"], line["trace_id"], line["span_id"]) == (
            "r-1", "c-1", "a" * 32, "b" * 16)
    assert bound["_request_id"] == "c-1"
    assert (contextualized["_request_id"], contextualized["_span_id"]) == ("c-1", "0" * 16)
    assert keyword["_trace_id"] == "f" * 32
    assert not [k for k in same if k.startswith("_")]
    assert outside["request_id"] == "job-7"  # no request: nothing to give way to


def test_an_applications_lifecycle_named_fields_never_pass_for_ridtraces(tmp_path: Path) -> None:
    # A webhook receiver logging its payload's type the usual way wrote
    # "event": "response.unlinked" on a ridtrace/1 line, and `analyze` reported an
    # Unlinked failure of the request that logged it (exit 1): any client could fail the
    # CI gate. `deprecated_headers` on an ordinary line made five deprecated-header uses.
    from ridtrace.tracing.eventlog import EventLog
    from tests.support.inprocess_cli import run_in_process

    path = tmp_path / "webhook.jsonl"
    with _stdlib_logging_to(path):
        token = context.enter(RequestContext(request_id="r-1", trace_id="a" * 32,
                                             span_id="b" * 16))  # fmt: skip
        try:
            EventLog("tests").info("request.start", event="request.start")
            logger.info("webhook received", event="response.unlinked", outcome="error",
                        deprecated_headers="x-api-version", fp_out="f" * 16)
            logging.getLogger("app").warning("hook", extra={"event": "deprecated_header",
                                                            "header": "x-legacy-token"})
            EventLog("tests").info("request.end", event="request.end", outcome="ok",
                                   status=200, duration_ms=1.0)
        finally:
            context.leave(token)
    start, app, stdlib, end = read_lines(path)
    assert (start["event"], end["event"], end["outcome"]) == ("request.start", "request.end", "ok")
    assert not {"event", "outcome", "deprecated_headers", "fp_out"} & set(app)
    assert (app["_event"], app["_outcome"], app["_deprecated_headers"], app["_fp_out"]) == (
        "response.unlinked", "error", "x-api-version", "f" * 16)
    assert "event" not in stdlib and stdlib["_event"] == "deprecated_header"
    code, out, _ = run_in_process(["analyze", str(path), "--format", "json"])
    report = json.loads(out)
    assert (code, report["findings"], report["summary"]["requests"]) == (0, [], 1)


@pytest.mark.parametrize("encoding", ["latin-1", "ascii"])
def test_a_text_stream_that_cannot_encode_every_character_gets_every_line(encoding: str) -> None:
    # stdout under PYTHONIOENCODING=latin-1 refused a line holding a character it has no
    # room for, and the events gathered with it were lost too; what it could encode
    # (`é` as one byte) was no UTF-8, a bad line to every reader.
    from ridtrace.tracing.eventlog import EventLog

    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding=encoding, write_through=True)
    handler = configure_logging(stream, service="txt", intercept_stdlib=False)
    try:
        EventLog("tests").info("request.start", event="request.start", path="/café")
        logger.info("café ☕ 𝄞")
        EventLog("tests").info("request.end", event="request.end", path="/☕")
    finally:
        logger.remove(handler)
    text = raw.getvalue().decode("ascii")  # nothing but ASCII reached the stream
    lines = [json.loads(line) for line in text.splitlines()]
    assert [x.get("path", x["message"]) for x in lines] == ["/café", "café ☕ 𝄞", "/☕"]


def test_an_applications_client_id_is_not_written_as_one_the_request_has_not(
    log_file: Path,
) -> None:
    # An old middleware contextualizing the raw x-request-id wrote it as the line's
    # `x_request_id` when ridtrace had rejected it (200 characters) or the request sent
    # none: `trace` found the request by an id the contract says it never had.
    token = context.enter(RequestContext(request_id="r-1", trace_id="a" * 32, span_id="b" * 16))
    try:
        with logger.contextualize(x_request_id="x" * 200, parent_span_id="c" * 16):
            logger.info("saying hello")
    finally:
        context.leave(token)
    with logger.contextualize(x_request_id="job-7"):
        logger.info("outside a request")
    inside, outside = read_lines(log_file)
    assert "x_request_id" not in inside and "parent_span_id" not in inside
    assert (inside["_x_request_id"], inside["_parent_span_id"]) == ("x" * 200, "c" * 16)
    assert outside["x_request_id"] == "job-7"  # no request: written as given
