"""Other loggers' JSON lines beside ridtrace's are read, not bad lines.

A sidecar or the application writing zap's, pino's, bunyan's, slog's, logrus's,
logstash's/ECS's, python-json-logger's, winston's or zerolog's JSON lines into ridtrace's log folder made each a bad line ("missing
time", "invalid time (an epoch number …)", "unknown format"), and a clean log
"incomplete", exit 3, though nothing was unread. A line is theirs only by its logger's
signature (the message key, that logger's time key, a level or version mark); anything
else stays a bad line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.forensics.live.follow import Follower, FollowSettings
from tests.cli.helpers import analyze_json
from tests.forensics.helpers import at, rt, rt_request, ts
from tests.support.extras import ENGINES

# An application's line quoting an error it saw: never an Unlinked response of ridtrace's.
QUOTED = "upstream said: Unlinked response; caller gone"


def _zap(s: float, **ids: str) -> dict[str, Any]:
    return {"level": "info", "ts": at(s).timestamp(), "logger": "sidecar",
            "caller": "proxy/main.go:42", "msg": QUOTED, **ids}


def _logstash(s: float, **ids: str) -> dict[str, Any]:
    return {"@timestamp": ts(s), "@version": "1", "message": QUOTED,
            "logger_name": "com.example.App", "level": "INFO", **ids}


def _ecs(s: float, **ids: str) -> dict[str, Any]:
    return {"@timestamp": ts(s), "log.level": "info", "message": QUOTED,
            "ecs.version": "1.6.0", **ids}


def _pino(s: float, **ids: str) -> dict[str, Any]:
    return {"level": 30, "time": round(at(s).timestamp() * 1000), "pid": 7,
            "hostname": "app-0", "msg": QUOTED, **ids}


def _bunyan(s: float, **ids: str) -> dict[str, Any]:
    return {"name": "app", "hostname": "app-0", "pid": 7, "level": 30, "msg": QUOTED,
            "time": ts(s), "v": 0, **ids}


def _slog(s: float, **ids: str) -> dict[str, Any]:
    return {"time": at(s).isoformat(), "level": "INFO", "msg": QUOTED, **ids}


def _logrus(s: float, **ids: str) -> dict[str, Any]:
    # With TimestampFormat time.RFC3339Nano (its default, RFC3339, drops the fraction).
    return {"level": "info", "msg": QUOTED,
            "time": at(s).strftime("%Y-%m-%dT%H:%M:%S.%f000+00:00"), **ids}


def _python_json_logger(s: float, **ids: str) -> dict[str, Any]:
    # JsonFormatter("%(levelname)s %(message)s", timestamp=True) with RequestIdsFilter,
    # as docs/tracing.md sets it up: 45 % of such a folder's lines were bad, exit 3.
    return {"levelname": "INFO", "message": QUOTED, "timestamp": at(s).isoformat(), **ids}


def _winston(s: float, **ids: str) -> dict[str, Any]:
    # format.combine(format.timestamp(), format.json())
    return {"level": "info", "message": QUOTED, "timestamp": ts(s), **ids}


def _zerolog(s: float, **ids: str) -> dict[str, Any]:
    # zerolog's keys (TimeFieldFormat RFC3339Nano here; its default drops the fraction):
    # a sidecar's log made every run on the folder exit 3, "none of its lines is a log
    # record".
    return {"level": "info", "time": ts(s), "message": QUOTED, **ids}


def _pino_labels(s: float, **ids: str) -> dict[str, Any]:
    # pino with `formatters: {level: (label) => ({level: label})}`: its time still in ms.
    return {**_pino(s, **ids), "level": "info"}


LOGGERS: dict[str, Callable[..., dict[str, Any]]] = {
    "zap": _zap, "logstash": _logstash, "ecs": _ecs, "pino": _pino, "bunyan": _bunyan,
    "slog": _slog, "logrus": _logrus, "python-json-logger": _python_json_logger,
    "winston": _winston, "zerolog": _zerolog, "pino-labels": _pino_labels,
}


def _log(path: Path, *others: Callable[..., dict[str, Any]]) -> Path:
    """Five clean ridtrace requests, each with a line of each of `others` 0.2 s in."""
    lines = []
    for i in range(5):
        ids = {"request_id": f"r{i}", "trace_id": f"{i + 1:032x}", "span_id": f"{i + 1:016x}"}
        lines.append(rt("request.start", time=ts(i), **ids))
        lines += [json.dumps(other(i + 0.2, **ids)) for other in others]
        lines.append(rt("request.end", time=ts(i + 0.5), status=200, outcome="ok", **ids))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("logger", sorted(LOGGERS))
def test_another_loggers_lines_beside_ridtraces_are_read(tmp_path: Path, logger: str) -> None:
    code, doc = analyze_json(str(_log(tmp_path / "app.jsonl", LOGGERS[logger])))
    summary = doc["summary"]
    # Their quoted Unlinked error is no finding: their lines are never evidence.
    assert (code, doc["findings"], summary["bad_lines"], summary["requests"]) == (0, [], 0, 5)
    assert summary["lines"] == 15 and not summary["incomplete"]
    # A line of theirs is a line of its request, at its own time.
    result = CliRunner().invoke(main, ["trace", "r2", str(tmp_path), "--format", "json", "-q"])
    assert result.exit_code == 0, result.stderr
    [request] = json.loads(result.stdout)["requests"]
    assert request["findings"] == []
    assert [(e["ms"], e["line"]) for e in request["events"]] == [(0.0, 7), (200.0, 8),
                                                                 (500.0, 9)]
    # Shown with its text and its level as ridtrace's are: `trace` showed no text for
    # zap's, pino's, slog's and logrus's `msg` (nor structlog's `event`), and levels as
    # each logger spells them (`30`, `info`) or none (python-json-logger's `levelname`).
    assert (request["events"][1]["event"], request["events"][1]["level"]) == (QUOTED, "INFO")


@pytest.mark.parametrize("logger", sorted(LOGGERS))
def test_a_line_judged_in_python_is_read_alike(tmp_path: Path, logger: str) -> None:
    # DuckDB rejects a lone surrogate escape, so this line is judged in Python
    # (`judge`): the signatures' and epoch times' twins must read it as the SQL does.
    def odd(s: float, **ids: str) -> dict[str, Any]:
        return {**LOGGERS[logger](s, **ids), "user": "\udc80"}

    code, doc = analyze_json(str(_log(tmp_path / "app.jsonl", odd)))
    assert (code, doc["summary"]["bad_lines"], doc["summary"]["requests"]) == (0, 0, 5)
    result = CliRunner().invoke(main, ["trace", "r2", str(tmp_path), "--format", "json", "-q"])
    [request] = json.loads(result.stdout)["requests"]
    assert [e["ms"] for e in request["events"]] == [0.0, 200.0, 500.0]
    assert (request["events"][1]["event"], request["events"][1]["level"]) == (QUOTED, "INFO")


# Each close to a signature, none matching one: a ridtrace or Dynamo line that lost its
# mark, a message with no level, an @timestamp with no logstash/ECS mark, a zap time in
# milliseconds (zap's default states seconds), a numeric level with a text time.
LOOK_ALIKES = {
    "ridtrace without schema": {"time": ts(1.1), "level": "INFO", "message": "hello",
                                "event": "request.start", "request_id": "r1"},
    "Dynamo without target": {"time": ts(1.2), "level": "INFO", "message": "request received",
                              "span_name": "http-request"},
    "msg and time, no level": {"time": ts(1.3), "msg": "hello"},
    "@timestamp, no mark": {"@timestamp": ts(1.4), "message": "hello"},
    "zap in milliseconds": {"level": "info", "ts": 1790949900123, "msg": "hello"},
}


def test_a_look_alike_without_a_signature_is_still_a_bad_line(tmp_path: Path) -> None:
    log = _log(tmp_path / "app.jsonl")
    with log.open("a") as out:
        out.writelines(json.dumps(line) + "\n" for line in LOOK_ALIKES.values())
    code, doc = analyze_json(str(log))
    summary = doc["summary"]
    assert (code, summary["bad_lines"], summary["requests"]) == (3, 5, 5)
    reasons = [s["reason"] for s in summary["bad_line_samples"]]
    assert reasons == ["unknown format", "unknown format", "unknown format", "missing time",
                       "invalid time (an epoch number; RFC 3339 text expected)"]


def test_a_folder_of_other_loggers_lines_only_is_incomplete(tmp_path: Path) -> None:
    # Read, and no bad line: but no request either, which says the folder is no
    # ridtrace log (or not all of one).
    lines = [json.dumps(other(i)) for i in range(3) for other in LOGGERS.values()]
    (tmp_path / "sidecar.jsonl").write_text("\n".join(lines) + "\n")
    code, doc = analyze_json(str(tmp_path))
    summary = doc["summary"]
    assert (code, summary["bad_lines"], summary["requests"]) == (3, 0, 0)
    assert summary["incomplete_reasons"] == [
        f"{len(lines)} lines read but no request found in them"]


def _follow(folder: Path) -> dict[str, Any]:
    follower = Follower([str(folder)], FollowSettings(from_start=True))
    follower.start()
    try:
        follower.run(lambda finding: None, stop=lambda: True)
    finally:
        follower.close()
    return follower.summary()


@pytest.mark.parametrize("engine", ENGINES)
def test_the_engines_and_the_follower_read_them_alike(tmp_path: Path, engine: str) -> None:
    _log(tmp_path / "app.jsonl", *LOGGERS.values())
    code, doc = analyze_json(str(tmp_path), "--engine", engine)
    summary = doc["summary"]
    assert (code, doc["findings"], summary["bad_lines"]) == (0, [], 0)
    assert (summary["lines"], summary["requests"]) == (5 * (2 + len(LOGGERS)), 5)
    live = _follow(tmp_path)
    assert (live["lines"], live["bad_lines"], live["requests"], live["incomplete"]) == (
        summary["lines"], 0, 5, False)


def test_a_shippers_ecs_envelope_still_gives_the_record_it_carries(tmp_path: Path) -> None:
    # Filebeat writes ECS fields around the line it shipped, in `message`: an envelope,
    # not an ECS logger's line, and the ridtrace record inside it is what is read.
    log = _log(tmp_path / "app.jsonl")
    ids = {"request_id": "r9", "trace_id": "9" * 32, "span_id": "9" * 16}
    shipped = [rt("request.start", time=ts(9), **ids),
               rt("request.end", time=ts(9.5), status=200, outcome="ok", **ids)]
    with log.open("a") as out:
        out.writelines(json.dumps({"@timestamp": ts(9.6), "message": line,
                                   "ecs": {"version": "8.0.0"}, "input": {"type": "filestream"},
                                   "log": {"offset": 0, "file": {"path": "/logs/a.jsonl"}}})
                       + "\n" for line in shipped)
    code, doc = analyze_json(str(log))
    assert (code, doc["summary"]["bad_lines"], doc["summary"]["requests"]) == (0, 0, 6)


def test_a_spanless_line_quoting_an_unlinked_error_is_no_unkeyed_evidence(tmp_path: Path) -> None:
    # Small files are read as one batch, every line kept (`small_files`): a line of
    # another logger's or structlog's that quotes an Unlinked error and names no span_id
    # was named as evidence no request holds, and the read "incomplete" (exit 3).
    _log(tmp_path / "app.jsonl")
    quoting = [*(other(1.0) for other in LOGGERS.values()),
               {"event": "upstream failed", "timestamp": ts(1.0), "level": "error"}]
    (tmp_path / "sidecar.jsonl").write_text("".join(
        json.dumps({**line, "error": QUOTED}) + "\n" for line in quoting))
    code, doc = analyze_json(str(tmp_path))
    summary = doc["summary"]
    assert (code, summary["bad_lines"], summary["unreadable_files"]) == (0, 0, [])


@pytest.mark.parametrize("judged_in_python", [False, True])
@pytest.mark.parametrize("logger", sorted(LOGGERS))
def test_a_line_naming_a_deprecated_header_is_no_use_of_it(
    tmp_path: Path, logger: str, judged_in_python: bool
) -> None:
    # An application's WARN inside a request, naming a header and saying "deprecated",
    # with an error of its own: analyze never took it for evidence, while the audit
    # counted the request as sending the header and export jaeger tagged its span.
    def warns(s: float, **ids: str) -> dict[str, Any]:
        odd = {"user": "\udc80"} if judged_in_python else {}
        return {**LOGGERS[logger](s, **ids), "header": "x-dynamo-request-id",
                "message": "upstream still sends a deprecated header", "error": "upstream",
                **odd}

    _log(tmp_path / "app.jsonl", warns)
    audit = CliRunner().invoke(main, ["audit", str(tmp_path), "--format", "json", "-q"])
    assert audit.exit_code == 0, audit.stderr
    assert json.loads(audit.stdout)["rows"] == []
    out = tmp_path / "jaeger.json"
    export = CliRunner().invoke(main, ["export", "jaeger", str(tmp_path), "-o", str(out), "-q"])
    assert export.exit_code == 0, export.stderr
    spans = [s for t in json.loads(out.read_text())["data"] for s in t["spans"]]
    assert len(spans) == 5
    tags = {tag["key"] for s in spans for tag in s["tags"]}
    assert not tags & {"deprecated", "error.message"}, tags


def test_a_structlog_line_is_shown_with_its_message(tmp_path: Path) -> None:
    # structlog's JSONRenderer writes the message in `event` and a lower-case level.
    def structlog(s: float, **ids: str) -> dict[str, Any]:
        return {"event": "work started", "level": "info", "timestamp": ts(s), **ids}

    _log(tmp_path / "app.jsonl", structlog)
    result = CliRunner().invoke(main, ["trace", "r2", str(tmp_path), "--format", "json", "-q"])
    [request] = json.loads(result.stdout)["requests"]
    assert [(e["event"], e["level"]) for e in request["events"]] == [
        ("request.start", "INFO"), ("work started", "INFO"), ("request.end", "INFO")]
    shown = CliRunner().invoke(main, ["trace", "r2", str(tmp_path), "-q"]).stdout
    assert "work started" in shown


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("judged_in", ["sql", "python"])
def test_a_late_line_of_another_logger_holds_no_request_open(
    tmp_path: Path, engine: str, judged_in: str
) -> None:
    # A sidecar's line under a request's ids, logged after that request ended, before
    # a later request took the same id. Judged in Python (a lone surrogate elsewhere on
    # it, which DuckDB refuses), it was kept for the rules as the SQL read never keeps
    # it: the first request then held the id until that line, a false duplicate in
    # flight with the line as its evidence. "Such a line is never evidence" (cli.md).
    first = {"request_id": "r", "trace_id": f"{1:032x}", "span_id": f"{1:016x}"}
    later = {"request_id": "r", "trace_id": f"{2:032x}", "span_id": f"{2:016x}"}
    late = _slog(1.5, **first)
    if judged_in == "python":
        late["user"] = "\udc80"
    lines = [
        *rt_request(first["span_id"], "r", 0.0, 0.5, trace=first["trace_id"]),
        *rt_request(later["span_id"], "r", 1.0, 2.0, trace=later["trace_id"]),
        json.dumps(late),
    ]
    (tmp_path / "app.jsonl").write_text("\n".join(lines) + "\n")
    code, doc = analyze_json(str(tmp_path), "--engine", engine)
    assert (code, doc["findings"], doc["summary"]["bad_lines"]) == (0, [], 0)
    assert doc["summary"]["requests"] == 2
    live = _follow(tmp_path)
    assert (live["requests"], live["duplicate_in_flight"]) == (2, 0)


@pytest.mark.parametrize("level", ["30", "30.0", "50", "info", "Warning", "Straße", "ﬁne",
                                   "info\x1b[31m", "7", "300"])
def test_a_level_is_shown_alike_whether_sql_or_python_judged_its_line(level: str) -> None:
    # DuckDB's upper() and Python's differ beyond ASCII ("ß"): only ASCII letters are
    # upper-cased, and pino's numbers (30, or 30.0 from a shipper) named, on both sides.
    import duckdb

    from ridtrace.forensics.reading.other_loggers import SHOWN_LEVEL, show_as_logged

    row: dict[str, Any] = {"schema": None, "target": None, "level": level, "levelname": None,
                           "log.level": None, "message": None, "msg": "m", "event": None}
    show_as_logged(row)
    [(shown,)] = duckdb.sql(
        f"SELECT {SHOWN_LEVEL} FROM (SELECT NULL::VARCHAR AS schema, NULL::VARCHAR AS target, "
        '$level AS level, NULL::VARCHAR AS levelname, NULL::VARCHAR AS "log.level")',
        params={"level": level}).fetchall()
    expected = {"30": "INFO", "30.0": "INFO", "50": "ERROR", "info": "INFO",
                "Warning": "WARNING"}
    assert shown == row["level"] == expected.get(level, level)


@pytest.mark.parametrize("message", [
    "Unlinked response; response task was dropped or cancelled",
    "Internal server error: Unlinked request; initiating request task was dropped",
    "The x-dynamo-request-id header is deprecated",
])
def test_an_applications_own_line_quoting_dynamos_words_makes_no_request(
    tmp_path: Path, message: str,
) -> None:
    # On ridtrace's schema only its event says what a line is: an application's own
    # line (a loguru sink, no event) quoting the Unlinked error made its span a request,
    # and a log with no lifecycle line read as holding one (exit 0, not "no request").
    ids = {"schema": "ridtrace/1", "service": "my-api", "pid": 1, "request_id": "r1",
           "trace_id": "1" * 32, "span_id": "2" * 16, "logger": "app"}
    lines = [{"time": ts(0.1), "level": "INFO", "message": "handling", **ids},
             {"time": ts(0.2), "level": "ERROR", "message": message, **ids}]
    (tmp_path / "app.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    code, doc = analyze_json(str(tmp_path))
    summary = doc["summary"]
    assert (code, summary["requests"], doc["findings"]) == (3, 0, [])
    assert summary["incomplete_reasons"] == ["2 lines read but no request found in them"]
    assert _follow(tmp_path)["requests"] == 0


def _views(folder: Path, request_id: str) -> tuple[int, int, int]:
    """What `audit` and `trace` make of `folder`: audit's exit code and requests, and the
    requests `trace request_id` matched (0 when none)."""
    audit = CliRunner().invoke(main, ["audit", str(folder), "--format", "json", "-q"])
    requests = json.loads(audit.stdout)["summary"]["requests"]
    trace = CliRunner().invoke(main, ["trace", request_id, str(folder), "--format", "json",
                                      "-q"])
    matched = len(json.loads(trace.stdout)["requests"]) if trace.exit_code == 0 else 0
    return audit.exit_code, requests, matched


@pytest.mark.parametrize("own", ["structlog", "python-json-logger", "ridtrace-sink"])
def test_an_applications_own_spans_are_no_requests_to_any_command(
    tmp_path: Path, own: str,
) -> None:
    # The events read (`trace`, `audit`, `export jaeger`) made a request of any span id
    # on any line: an application's own lines with its own request id "7" on two spans
    # were two requests holding "7" at once in `trace`, a duplicate in flight, and
    # `audit` read 3 requests from a folder `analyze` found none in (exit 3).
    lines = []
    for span in ("a1", "a2"):
        ids = {"request_id": "7", "trace_id": span * 16, "span_id": span * 8}
        for s in (0.1, 0.4):
            if own == "structlog":
                lines.append({"event": "charging card", **ids, "level": "info",
                              "timestamp": ts(s)})
            elif own == "python-json-logger":
                lines.append(_python_json_logger(s, **ids))
            else:
                lines.append({"time": ts(s), "level": "INFO", "message": "charging card",
                              "logger": "app", "schema": "ridtrace/1", "service": "my-api",
                              "pid": 1, **ids})
    (tmp_path / "app.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    code, doc = analyze_json(str(tmp_path))
    assert (code, doc["summary"]["requests"]) == (3, 0)
    assert _views(tmp_path, "7") == (3, 0, 0)
    # Beside a real request they are still none: its request alone is read.
    _log(tmp_path / "service.jsonl")
    code, doc = analyze_json(str(tmp_path))
    assert (code, doc["summary"]["requests"], doc["findings"]) == (0, 5, [])
    assert _views(tmp_path, "7") == (0, 5, 0)
