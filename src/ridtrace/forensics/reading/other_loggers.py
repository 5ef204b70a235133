"""Other loggers' JSON lines beside ridtrace's: known by their signature fields, read, not bad.

A sidecar or the application itself often writes JSON lines of its own logger into the
folder ridtrace logs to: zap's (``ts`` in epoch seconds, ``level``, ``msg``), pino's
(``time`` in epoch ms, a numeric ``level``, ``msg``), bunyan's (``v``, ``name``, ``msg``,
``time`` in RFC 3339), Go slog's and logrus's (``time`` in RFC 3339, ``level``, ``msg``),
logstash's or ECS's (``@timestamp``, ``message``, ``@version``/``ecs.version``/
``log.level``), zerolog's (``time`` in RFC 3339, ``level``, ``message``), and
python-json-logger's (``timestamp=True``: ``timestamp``, ``message``,
``levelname``, the ids `RequestIdsFilter` sets, as docs/tracing.md sets it up) or
winston's (``timestamp``, ``message``, ``level``). Each was a bad line ("missing time",
"invalid time (an epoch number …)", "unknown format"), so such a folder was
"incomplete" (exit 3) though nothing was unread.

A line is one of theirs only when it matches a signature whole: no ``schema`` nor
``target`` (ridtrace's and Dynamo's marks), and the message key with that logger's time
key and level. ridtrace and Dynamo write neither ``msg`` nor ``@timestamp``, so one of
their lines that lost its mark stays a bad line, as does any JSON matching no signature.
Like structlog's (`sql.STRUCTLOG`), such a line is read as a line of its request and is
never evidence. Each SQL signature has its Python twin, for the lines judged in Python.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from typing import Any, Final

# Read for the signatures only: never a field of an event.
SIGNATURE_FIELDS: Final[tuple[str, ...]] = (
    "msg", "level", "ts", "@timestamp", "@version", "ecs.version", "log.level", "ecs",
    "levelname",
)

# A line with neither ridtrace's mark (`schema`) nor Dynamo's (`target`).
UNMARKED = "(schema IS NULL AND target IS NULL)"
# msg, level and a time: zap's `ts`; pino's, bunyan's, slog's and logrus's `time`.
_MSG = '(msg IS NOT NULL AND "level" IS NOT NULL)'
ZAP = f"({UNMARKED} AND {_MSG} AND ts IS NOT NULL)"
_MSG_TIME = f'({UNMARKED} AND {_MSG} AND "time" IS NOT NULL)'
# Filebeat and Logstash ship a service's line in `message`, ECS fields around it: a line
# carrying a record (a `"time"` key) is such an envelope, for `rescue` to take it off.
ECS = (f'({UNMARKED} AND "@timestamp" IS NOT NULL AND NOT contains(message, \'"time"\') '
       'AND ("@version" IS NOT NULL OR "ecs.version" IS NOT NULL OR "log.level" IS NOT NULL '
       'OR ecs IS NOT NULL))')
# python-json-logger's (`timestamp=True`) and winston's: an RFC 3339 `timestamp`, a
# `message` and a level. No `event`: structlog's (`sql.STRUCTLOG`) is told apart.
PYTHON_JSON = (f'({UNMARKED} AND "timestamp" IS NOT NULL AND message IS NOT NULL '
               'AND event IS NULL AND (levelname IS NOT NULL OR "level" IS NOT NULL))')
# Go zerolog's defaults: `time` (RFC 3339), `level`, `message`. No `msg` (slog's and
# logrus's), no `event` (a ridtrace lifecycle line that lost its mark) and no
# `span_name` (a Dynamo line that lost its mark): those stay bad lines.
ZEROLOG = (f'({UNMARKED} AND message IS NOT NULL AND "level" IS NOT NULL '
           'AND "time" IS NOT NULL AND msg IS NULL AND event IS NULL AND span_name IS NULL)')
OTHER_LOGGER = f"({ZAP} OR {_MSG_TIME} OR {ECS} OR {PYTHON_JSON} OR {ZEROLOG})"
# Where the time is when `time` holds none.
OTHER_TIME_TEXT = (f'CASE WHEN {ZAP} THEN ts WHEN {ECS} THEN "@timestamp" '
                   f'WHEN {PYTHON_JSON} THEN "timestamp" END')

# What the event views show of such a line, as of ridtrace's and Dynamo's: its text
# (structlog's is its `event`, zap's, pino's, slog's and logrus's `msg`) and its level
# in upper case (structlog's "info"; python-json-logger's `levelname`, ECS's
# `log.level`; pino's and bunyan's numbers by their names, 30 is INFO). `trace` showed
# such lines with no text at all. Never read by the rules.
SHOWN_MESSAGE = f"CASE WHEN {UNMARKED} THEN coalesce(message, msg, event) ELSE message END"
_NUMBERED_LEVELS: Final[dict[str, str]] = {
    "10": "TRACE", "20": "DEBUG", "30": "INFO", "40": "WARN", "50": "ERROR", "60": "FATAL",
}
# pino's number, as a shipper that parses JSON may write it too (30.0).
_NUMBERED = re.compile(r"([1-6]0)(?:\.0+)?")
# Only a level of ASCII letters is upper-cased: DuckDB's and Python's upper() differ
# beyond ASCII ("ß"), and a hostile level's escapes are left as written.
_LETTERS = re.compile(r"[A-Za-z]+")
_ANY_LEVEL = 'coalesce("level", levelname, "log.level")'
SHOWN_LEVEL = (
    f"CASE WHEN {UNMARKED} THEN CASE regexp_extract({_ANY_LEVEL}, '^([1-6]0)(\\.0+)?$', 1) "
    + " ".join(f"WHEN '{n}' THEN '{name}'" for n, name in _NUMBERED_LEVELS.items())
    + f" ELSE CASE WHEN regexp_full_match({_ANY_LEVEL}, '[A-Za-z]+') THEN upper({_ANY_LEVEL}) "
    + f'ELSE {_ANY_LEVEL} END END ELSE "level" END'
)


def show_as_logged(row: dict[str, Any]) -> None:
    """`SHOWN_MESSAGE` and `SHOWN_LEVEL`'s Python twin, in place, for a line judged in
    Python (its signature fields still in `row`)."""
    if not _unmarked(row):
        return
    row["message"] = next((row[k] for k in ("message", "msg", "event")
                           if row.get(k) is not None), None)
    level = next((row[k] for k in ("level", "levelname", "log.level")
                  if row.get(k) is not None), None)
    if level is None:
        return
    numbered = _NUMBERED.fullmatch(level)
    if numbered is not None:
        row["level"] = _NUMBERED_LEVELS[numbered.group(1)]
    else:
        row["level"] = level.upper() if _LETTERS.fullmatch(level) else level


# The latest time an epoch number may state (9999-12-31T23:59:59Z): a larger one is
# no time in this unit, and would overflow DuckDB's timestamp.
_LAST_SECOND = 253402300799
_NUMBER_SQL = r"'-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?'"
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _seconds_sql(text: str, scale: int) -> str:
    value = f"TRY_CAST({text} AS DOUBLE) / {scale}"
    return (f"CASE WHEN regexp_full_match({text}, {_NUMBER_SQL}) AND {value} "
            f"BETWEEN 0 AND {_LAST_SECOND} "
            f"THEN make_timestamptz(CAST(round({value} * 1000000) AS BIGINT)) END")


# A time the signature states the unit of: zap's `ts` in seconds; pino's `time` in ms,
# a number beside `msg` (slog, logrus and bunyan write theirs as text), whether pino's
# level is its number or, with `formatters.level`, its label.
OTHER_EPOCH_TIME = (
    f'CASE WHEN {ZAP} THEN {_seconds_sql("ts", 1)} '
    f'WHEN {_MSG_TIME} THEN {_seconds_sql(chr(34) + "time" + chr(34), 1000)} END'
)


def _unmarked(row: dict[str, Any]) -> bool:
    return row.get("schema") is None and row.get("target") is None


def _zap(row: dict[str, Any]) -> bool:
    return (_unmarked(row) and row.get("msg") is not None and row.get("level") is not None
            and row.get("ts") is not None)


def _msg_time(row: dict[str, Any]) -> bool:
    return (_unmarked(row) and row.get("msg") is not None and row.get("level") is not None
            and row.get("time") is not None)


def _ecs(row: dict[str, Any]) -> bool:
    message = row.get("message")
    return (_unmarked(row) and row.get("@timestamp") is not None
            and message is not None and '"time"' not in message
            and any(row.get(k) is not None for k in ("@version", "ecs.version", "log.level",
                                                     "ecs")))


def _python_json(row: dict[str, Any]) -> bool:
    return (_unmarked(row) and row.get("timestamp") is not None
            and row.get("message") is not None and row.get("event") is None
            and (row.get("levelname") is not None or row.get("level") is not None))


def _zerolog(row: dict[str, Any]) -> bool:
    return (_unmarked(row) and row.get("message") is not None
            and row.get("level") is not None and row.get("time") is not None
            and row.get("msg") is None and row.get("event") is None
            and row.get("span_name") is None)


def other_logger_record(row: dict[str, Any]) -> bool:
    """Whether a parsed line is another logger's (`OTHER_LOGGER`'s Python twin)."""
    return _zap(row) or _msg_time(row) or _ecs(row) or _python_json(row) or _zerolog(row)


def structlog_record(row: dict[str, Any]) -> bool:
    """Whether a parsed line is structlog's (`sql.STRUCTLOG`'s Python twin)."""
    return (row.get("schema") is None and row.get("target") is None
            and row.get("event") is not None and row.get("timestamp") is not None)


def an_application_line(document: dict[str, Any]) -> bool:
    """Whether a shipper's document (a hit's ``_source``, an entry's ``jsonPayload``) is
    an application's own line as its logger wrote it: structlog's, or another logger's
    but logstash's and ECS's, whose shape is Filebeat's own envelope (the line in
    ``message``). Read as an envelope, its ``message`` text was taken for the line
    shipped ("not JSON"), or the entry whole ("missing time")."""
    return structlog_record(document) or (other_logger_record(document)
                                          and not _ecs(document))


def other_time_key(row: dict[str, Any]) -> str | None:
    """The key of an other logger's time where `time` holds none (`OTHER_TIME_TEXT`)."""
    if _zap(row):
        return "ts"
    if _ecs(row):
        return "@timestamp"
    return "timestamp" if _python_json(row) else None


def _from_epoch(text: str, scale: int) -> datetime | None:
    if _NUMBER.fullmatch(text) is None:
        return None
    seconds = float(text) / scale
    if not 0 <= seconds <= _LAST_SECOND:
        return None
    # DuckDB's round() rounds half away from zero; Python's round() to even.
    micros = math.floor(abs(seconds * 1_000_000) + 0.5)
    return _EPOCH + timedelta(microseconds=micros)


def other_epoch_time(row: dict[str, Any]) -> datetime | None:
    """An other logger's epoch time, in the unit its signature states (`OTHER_EPOCH_TIME`)."""
    if _zap(row):
        return _from_epoch(row["ts"], 1)
    if _msg_time(row):
        return _from_epoch(row["time"], 1000)
    return None
