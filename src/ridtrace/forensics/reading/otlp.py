"""The OpenTelemetry Collector's file exporter: OTLP JSON, a batch of log records a line.

A collector whose filelog receiver tails a pod's logs and whose ``file`` exporter writes
them down holds each service line as a log record's ``body`` (its text, or the map a
``json_parser`` operator made of it), many records to a line:
``{"resourceLogs":[{"resource":…,"scopeLogs":[{"logRecords":[{"body":{…}},…]}]}]}``.
Read as it is, each such line was a bad one, the report "none of its lines is a log
record" with 0 requests. A line's records are written back to back on that line, each
then read as a record and cited at the line, as records a ``cat`` joined are.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from ridtrace.forensics.reading.unwrap_parts import LineByLine, batched_record, json_object

__all__ = ["OTLP_HEAD", "OtlpUnwrapper"]

OTLP_HEAD = re.compile(rb'\{\s*"resourceLogs"\s*:')


def _value(any_value: Any) -> Any:
    """An OTLP AnyValue (``{"stringValue": …}``, ``{"kvlistValue": {"values": […]}}``, …)
    as the plain JSON value it stands for."""
    if not isinstance(any_value, dict) or len(any_value) != 1:
        return None
    (kind, value), = any_value.items()
    if kind == "kvlistValue":
        pairs = value.get("values") if isinstance(value, dict) else None
        return {p.get("key"): _value(p.get("value")) for p in pairs or []
                if isinstance(p, dict) and isinstance(p.get("key"), str)}
    if kind == "arrayValue":
        items = value.get("values") if isinstance(value, dict) else None
        return [_value(v) for v in items or []]
    return value  # string, bool, int (a string in OTLP JSON), double, bytes (base64)


def _record_text(log_record: Any) -> bytes:
    body = _value(log_record.get("body")) if isinstance(log_record, dict) else None
    if isinstance(body, str):
        return batched_record(body)
    if isinstance(body, dict):
        if "time" not in body and "timestamp" not in body:
            stamp = _record_time(log_record)
            if stamp is not None:
                body = {"time": stamp, **body}
        return json.dumps(body, separators=(",", ":")).encode("ascii")
    return json.dumps({"otlp_body": body}, separators=(",", ":")).encode("ascii")


def _record_time(log_record: dict[str, Any]) -> str | None:
    """The record's time as RFC 3339: ``timeUnixNano``, else ``observedTimeUnixNano``
    (the Logs Data Model's rule for a reader of one time), else None. A pipeline that
    parsed the service's time into the record's and dropped it from the body, or a
    receiver that set only the observed time, left every record "missing time"."""
    for key in ("timeUnixNano", "observedTimeUnixNano"):
        try:
            nanos = int(log_record.get(key) or 0)  # a string in OTLP JSON; 0 is unset
        except (TypeError, ValueError):
            continue
        if nanos > 0:
            seconds, fraction = divmod(nanos, 1_000_000_000)
            try:
                moment = datetime.fromtimestamp(seconds, tz=UTC)
            except (OverflowError, OSError, ValueError):
                continue  # past the year 9999 (a corrupt field): stopped the read, exit 4
            return f"{moment:%Y-%m-%dT%H:%M:%S}.{fraction:09d}Z"
    return None


class OtlpUnwrapper(LineByLine):
    """The collector's file exporter: each line's log records, back to back."""

    name = "OpenTelemetry Collector file"

    def unwrap(self, line: bytes, number: int) -> bytes:
        if OTLP_HEAD.match(line) is None:
            return line
        batch = json_object(line)
        if batch is None:
            return line
        return b"".join(
            self._record_text(resource, record, number)
            for resource in _list(batch.get("resourceLogs"))
            for scope in _field(resource, "scopeLogs", "instrumentationLibraryLogs")
            for record in _field(scope, "logRecords", "logs")
        )

    def _record_text(self, resource: Any, log_record: Any, number: int) -> bytes:
        """A record's text; a part of a CRI line the receiver shipped as the runtime wrote
        it (a filelog receiver without its CRI parsing) put together with the others
        first (`batched_part`), the whole record at its last part's line."""
        body = _value(log_record.get("body")) if isinstance(log_record, dict) else None
        if not isinstance(body, str):
            return _record_text(log_record)
        # The same container's file: the resource and the record's attributes (its
        # `log.file.path`) are the same for each part of one line.
        joined = self.batched_part(body, lambda: json.dumps(
            [resource.get("resource"), log_record.get("attributes")],
            sort_keys=True, default=str), number)
        return _record_text(log_record) if joined is None else joined


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _field(holder: Any, name: str, old_name: str) -> list[Any]:
    """`holder`'s list under `name`, or under the name OTLP gave it before 0.15
    (``instrumentationLibraryLogs``; ``logs`` before 0.11), as collectors released
    before mid-2022 write it: read as an empty batch, each such line was left out
    without a bad line, and the report said "No findings" on logs it never read."""
    if not isinstance(holder, dict):
        return []
    return _list(holder.get(name) if name in holder else holder.get(old_name))
