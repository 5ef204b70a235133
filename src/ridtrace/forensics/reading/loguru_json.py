"""loguru's own JSON lines (``logger.add(path, serialize=True)``), flattened to ridtrace's.

loguru serializes a record as ``{"text": ..., "record": {...}}``: the time under
``record.time.repr``, the level under ``record.level.name``, the fields bound to it
(ridtrace's event and the request's ids, docs/tracing.md) under ``record.extra``. An
application that logs with its own serializing sink beside or instead of
`configure_logging`'s writes ridtrace's events so; read as they were, every line was a
bad one ("missing time") and the result said no request was read.

Each line becomes the line `configure_logging`'s sink writes for that record: ``time``,
``level``, ``message``, ``logger``, ``pid``, the exception as ``"Type: value"``, then
the extra fields, marked with ridtrace's schema (loguru's lines are the ones that sink
writes, laid out otherwise). A line that is not loguru's passes through as it is.
"""

from __future__ import annotations

import json
from typing import Any

from ridtrace.contract import APPLICATION_RESERVED, LIFECYCLE_FIELDS, LOG_SCHEMA
from ridtrace.forensics.reading.unwrap_parts import LineByLine, each_object, json_objects

__all__ = ["LoguruJsonUnwrapper", "loguru_json_in", "loguru_record"]


class LoguruJsonUnwrapper(LineByLine):
    """loguru's ``serialize=True`` lines as `configure_logging`'s JSON lines."""

    name = "loguru serialize=True JSON"

    def unwrap(self, line: bytes, number: int) -> bytes:
        return each_object(line, _flat_line)


def _flat_line(entry: dict[str, Any]) -> bytes | None:
    record = loguru_record(entry)
    if record is None:
        return None
    return json.dumps(_flat(record), separators=(",", ":")).encode("ascii")


def loguru_record(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The record of a loguru ``serialize=True`` line, or None for any other object."""
    record = entry.get("record")
    if not (isinstance(entry.get("text"), str) and isinstance(record, dict)):
        return None
    when = record.get("time")
    return record if isinstance(when, dict) and isinstance(when.get("repr"), str) else None


def loguru_json_in(head: bytes) -> LoguruJsonUnwrapper | None:
    """The unwrapper when the head's first JSON object is a loguru ``serialize=True`` line."""
    if b'"record"' not in head:  # a plain log's head: one substring test, no parse
        return None
    for line in head.split(b"\n"):
        if line.lstrip()[:1] != b"{":
            continue
        entries = json_objects(line)
        if entries is None:
            return None  # a torn first record: a plain log's reader judges it
        return LoguruJsonUnwrapper() if loguru_record(entries[0]) is not None else None
    return None


def _flat(record: dict[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {"time": record["time"]["repr"], "schema": LOG_SCHEMA}
    level = record.get("level")
    if isinstance(level, dict) and isinstance(level.get("name"), str):
        flat["level"] = level["name"]
    for key, field in (("message", "message"), ("logger", "name")):
        if isinstance(record.get(field), str):
            flat[key] = record[field]
    process = record.get("process")
    if isinstance(process, dict) and process.get("id") is not None:
        flat["pid"] = process["id"]
    error = record.get("exception")
    if isinstance(error, dict) and error.get("type"):
        value = error.get("value")
        flat["exception"] = f"{error['type']}: {value}" if value else str(error["type"])
    extra = record.get("extra")
    if isinstance(extra, dict):
        # An application's field named like the line's own or a lifecycle field is kept
        # apart as the sink keeps it (`_event`): a webhook's `event="response.unlinked"`
        # was an Unlinked failure, exit 1. ridtrace's own events through loguru
        # (`events_via_loguru`) are logged under their module's name, ridtrace's.
        own = _is_ridtraces(record.get("name"))
        for key, value in extra.items():
            if key in APPLICATION_RESERVED and not (own and key in LIFECYCLE_FIELDS):
                key = "_" + key
            flat.setdefault(key, value)
    return flat


def _is_ridtraces(logger: object) -> bool:
    return isinstance(logger, str) and (logger == "ridtrace" or logger.startswith("ridtrace."))
