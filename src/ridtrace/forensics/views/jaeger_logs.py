"""Jaeger tags, processes and span logs for `ridtrace export jaeger` (`views.jaeger`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import numpy as np
import pandas as pd

from ridtrace.contract import (
    DURATION_MS,
    REQUEST_END,
    REQUEST_START,
    RESPONSE_SENT,
    SPAN_CLOSED,
    WORKER_START,
)
from ridtrace.forensics.reading.sql import CLOSING_EVENTS
from ridtrace.forensics.records.requests import epoch_us
from ridtrace.forensics.views import jaeger_ids

__all__ = ["ANSWERS", "LOG_FILE_TAG", "SpanLogs", "failed", "jaeger_form", "present", "process_id",
           "tag"]

# Numbers in Jaeger's and OpenTelemetry's model (an HTTP status is an integer
# attribute): as strings, a tool reading the file compares "500" with "60" as text.
_INT_TAGS = frozenset({"status"})


def tag(key: str, value: Any) -> dict[str, Any]:
    """A Jaeger tag: a bool, an int64 for `_INT_TAGS`, else a string."""
    if isinstance(value, bool):
        return {"key": key, "type": "bool", "value": value}
    text = str(value)
    if key in _INT_TAGS and text.isascii() and text.isdigit() and len(text) <= 18:  # int64
        return {"key": key, "type": "int64", "value": int(text)}
    return {"key": key, "type": "string", "value": text}


# The process tag naming the log file a span was read from (OpenTelemetry's attribute).
LOG_FILE_TAG: Final = "log.file.path"


def process_id(trace: dict[str, Any], service: str, file: str) -> str:
    """The trace's process for `service` as logged to `file`, added when new.

    A process is one per service and file, not per service name: Dynamo's workers all log
    as `dynamo-worker` and scaled-out frontends all as `frontend`, and one process for
    them all hid which worker served a request, what `ridtrace trace` shows by file.
    """
    procs: dict[str, Any] = trace["processes"]
    found = next((k for k, v in procs.items() if v["serviceName"] == service
                  and v["tags"][0]["value"] == file), None)
    if found is not None:
        return found
    pid = f"p{len(procs) + 1}"
    procs[pid] = {"serviceName": service, "tags": [tag(LOG_FILE_TAG, file)]}
    return pid


def present(value: Any) -> bool:
    """Whether a frame cell holds a value (not None, NA or NaN)."""
    return value is not None and value is not pd.NA and value == value


def failed(outcome: Any, status: Any) -> bool:
    """Whether a span gets Jaeger's error flag: its outcome says error, or, where none was
    logged (Dynamo at INFO level writes only "http response sent"), it answered an HTTP
    5xx, as OpenTelemetry's HTTP conventions mark a server span."""
    if present(outcome):
        return bool(outcome == "error")
    text = str(status) if present(status) else ""
    return text.isascii() and text.isdigit() and 500 <= int(text) <= 599


# A span's own lines that end it: what it answered with. Lines its tasks log afterwards
# (the legacy pump's Unlinked response) are its logs, not its duration.
ANSWERS = np.array([REQUEST_END, RESPONSE_SENT], dtype=object)
# A span's lines that end it, whatever its side: a worker's worker.end (Dynamo's "request
# completed"), its refusal or error, a span's close.
_CLOSES = np.array(CLOSING_EVENTS, dtype=object)
# A stated duration beyond this is no request's (as `reading.sql` bounds Dynamo's).
_LONGEST_MS = 7 * 24 * 3600 * 1000.0


class SpanLogs:
    """Lifecycle lines (only lines with an ``event``) as Jaeger span logs, built per span
    when its trace is written: all of them at once held every line of the input as
    Python objects. A span id says which span only within its trace, as requests are
    keyed. Each line is moved by its file's clock offset (µs), as its span is."""

    def __init__(self, events: pd.DataFrame | None, offsets: dict[str, int]) -> None:
        self._rows: dict[tuple[str, str], np.ndarray] = {}
        if events is None or events.empty:
            return
        # Only lines of spans that can be exported: a span needs both ids (Dynamo logs
        # no trace_id when its trace context is missing), and a missing one is no id.
        rows = events[events["event"].notna().to_numpy() & events["span_id"].notna().to_numpy()
                      & events["trace_id"].notna().to_numpy()]
        if not len(rows):
            return
        us = epoch_us(rows["time"])
        if offsets:
            us = us + rows["file"].astype(str).map(offsets).fillna(0).to_numpy(dtype=np.int64)
        self._us = us
        self._event = rows["event"].astype("object").to_numpy()
        self._message = rows["message"].astype("object").to_numpy()
        self._stated = pd.to_numeric(
            rows[DURATION_MS].astype("object") if DURATION_MS in rows else pd.Series(
                np.full(len(rows), None, dtype=object)), errors="coerce").to_numpy()
        # Keyed by the ids' Jaeger form, as the spans are: one spelling per line.
        keys = pd.DataFrame({"trace": jaeger_form(rows["trace_id"], jaeger_ids.trace_id),
                             "span": jaeger_form(rows["span_id"], jaeger_ids.span_id)})
        # pandas-stubs types a group key as Hashable; these are (trace, span) strings.
        self._rows = keys.groupby(["trace", "span"], sort=False).indices  # type: ignore[assignment]

    def answered_at(self, trace: str, span: str) -> int | None:
        """When the span answered its caller (its last `request.end`, or Dynamo's
        `http response sent`; else its `SPAN_CLOSED`), in µs; None when none of its
        lines says so."""
        at = self._rows.get((trace, span))
        if at is None:
            return None
        answers = at[np.isin(self._event[at], ANSWERS)]
        if not len(answers):
            # Dynamo at INFO with span events: a span's close is its only end line, and
            # it ended; without this it was warned as cut off by a crash.
            answers = at[self._event[at] == SPAN_CLOSED]
        return int(self._us[answers].max()) if len(answers) else None

    def stated_start(self, trace: str, span: str, start: int) -> tuple[bool, int | None]:
        """Whether the span logged no line where it began (no `request.start`; rotated
        away, or lost), its `start` (µs) not dated back by a duration a line states (as
        Dynamo's are read); and then when its answer says it began, its time less the
        `duration_ms` it states, or None when it states none."""
        at = self._rows.get((trace, span))
        if at is None or REQUEST_START in self._event[at] or start < self._us[at].min():
            return False, None
        answers = at[np.isin(self._event[at], ANSWERS)]
        if not len(answers):
            return True, None
        last = answers[np.argmax(self._us[answers])]
        stated = float(self._stated[last])
        if not 0 <= stated <= _LONGEST_MS:  # NaN (none stated) too
            return True, None
        return True, min(start, int(self._us[last]) - round(stated * 1000))

    def began_work_unended(self, trace: str, span: str) -> bool:
        """Whether the span logged `worker.start` (Dynamo's worker "request received")
        and no line that ends it. Dynamo's workers at INFO level log neither, so a span
        with no start line is not judged."""
        at = self._rows.get((trace, span))
        if at is None:
            return False
        events = self._event[at]
        return bool(np.isin(WORKER_START, events)) and not np.isin(events, _CLOSES).any()

    def get(self, trace: str, span: str) -> list[dict[str, Any]]:
        """The span's lines as Jaeger logs, in time order."""
        at = self._rows.get((trace, span))
        if at is None:
            return []
        at = at[np.argsort(self._us[at], kind="stable")]
        logs = []
        for i in at:
            fields = [tag("event", self._event[i])]
            if present(self._message[i]):
                fields.append(tag("message", self._message[i]))
            logs.append({"timestamp": int(self._us[i]), "fields": fields})
        return logs


def jaeger_form(ids: pd.Series, convert: Callable[[str], str]) -> np.ndarray:
    """Each id of ``ids`` (none missing) in its Jaeger form, converted once per distinct
    spelling."""
    text = ids.astype(str)
    forms = {logged: convert(logged) for logged in text.unique()}
    return text.map(forms).to_numpy(dtype=object)
