"""Jaeger tags, processes and span logs for `ridtrace export jaeger` (`views.jaeger`)."""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import pandas as pd

from ridtrace.contract import (
    DURATION_MS,
    GRPC_SERVER_FAULT_CODES,
    REQUEST_END,
    REQUEST_START,
    RESPONSE_SENT,
    SPAN_CLOSED,
    WORKER_START,
)
from ridtrace.forensics.reading.sql import CLOSING_EVENTS
from ridtrace.forensics.records.requests import epoch_us
from ridtrace.forensics.views import jaeger_ids
from ridtrace.forensics.views.file_clocks import line_offsets_us

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
    """Whether a span gets Jaeger's error flag, as the span exported live had its error
    status: its outcome says error; or, where none was logged (Dynamo at INFO level
    writes only "http response sent"), it answered an HTTP 5xx, as OpenTelemetry's HTTP
    conventions mark a server span; or a gRPC call ended on a server fault's code (no
    HTTP status is one): a call whose deadline passed is `cancelled` on its lines, its
    live span a DEADLINE_EXCEEDED error, and the file's span showed it as a success. By
    its status alone: an app's `annotate_request(method=...)` on a gRPC line, which has
    no HTTP method of its own, made such a call an HTTP one."""
    text = str(status) if present(status) else ""
    # A status of thousands of digits is none (and past 4,300 int() refuses it).
    code = int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else None
    if code in GRPC_SERVER_FAULT_CODES:
        return True
    if present(outcome):
        return bool(outcome == "error")
    return code is not None and 500 <= code <= 599


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
    keyed. Each line is moved by its file's clock offset (µs), as its span is.

    What the export asks of every span (when it answered, whether it logged its start,
    whether a worker's ended) is worked out for all spans at once here: asked span by
    span, a handful of numpy calls on a few lines each cost more than the rest of the
    span's export.
    """

    def __init__(self, events: pd.DataFrame | None, offsets: dict[str, int]) -> None:
        self._group: dict[tuple[str, str], int] = {}
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
            us = us + line_offsets_us(rows, offsets)
        self._us = us
        self._event = rows["event"].astype("object").to_numpy()
        self._message = rows["message"].astype("object").to_numpy()
        # Why an attempt was given up and where (a dispatch line's worker, reason, marked
        # down), and a line's error: the span's tags name only the worker that served.
        self._details = [(name, rows[name].astype("object").to_numpy())
                         for name in ("dispatch", "error") if name in rows]
        self._stated = pd.to_numeric(
            rows[DURATION_MS].astype("object") if DURATION_MS in rows else pd.Series(
                np.full(len(rows), None, dtype=object)), errors="coerce").to_numpy()
        # Keyed by the ids' Jaeger form, as the spans are: one spelling per line.
        group, traces, spans = _pairs(jaeger_form(rows["trace_id"], trace=True),
                                      jaeger_form(rows["span_id"], trace=False))
        self._group = {key: g for g, key in enumerate(zip(traces, spans, strict=True))}
        self._facts(group, len(traces))

    def _facts(self, group: np.ndarray, groups: int) -> None:
        """Each span's lines in time order (ties in line order), and its answers' facts."""
        us, event = self._us, pd.Series(self._event)
        self._order = np.lexsort((us, group))
        self._bounds = np.concatenate(
            [[0], np.cumsum(np.bincount(group, minlength=groups))]).astype(np.int64)
        answers = event.isin(ANSWERS).to_numpy()
        self._answered = _group_max(group, us, answers, groups)
        self._closed = _group_max(group, us, (event == SPAN_CLOSED).to_numpy(), groups)
        self._logged_start = _group_any(group, (event == REQUEST_START).to_numpy(), groups)
        self._first_us = np.full(groups, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(self._first_us, group, us)
        worker_start = _group_any(group, (event == WORKER_START).to_numpy(), groups)
        self._unended = worker_start & ~_group_any(group, event.isin(_CLOSES).to_numpy(), groups)
        # The last answer's line: its latest, the first such line on a tie.
        at = np.flatnonzero(answers)
        by_span = at[np.lexsort((at, -us[at], group[at]))]
        first = np.ones(len(by_span), dtype=bool)
        first[1:] = group[by_span][1:] != group[by_span][:-1]
        self._last_answer = np.full(groups, -1, dtype=np.int64)
        self._last_answer[group[by_span[first]]] = by_span[first]

    def answered_at(self, trace: str, span: str) -> int | None:
        """When the span answered its caller (its last `request.end`, or Dynamo's
        `http response sent`; else its `SPAN_CLOSED`), in µs; None when none of its
        lines says so."""
        g = self._group.get((trace, span))
        if g is None:
            return None
        # Dynamo at INFO with span events: a span's close is its only end line, and it
        # ended; without this it was warned as cut off by a crash.
        for latest in (self._answered[g], self._closed[g]):
            if latest != _NONE:
                return int(latest)
        return None

    def stated_start(self, trace: str, span: str, start: int) -> tuple[bool, int | None]:
        """Whether the span logged no line where it began (no `request.start`; rotated
        away, or lost), its `start` (µs) not dated back by a duration a line states (as
        Dynamo's are read); and then when its answer says it began, its time less the
        `duration_ms` it states, or None when it states none."""
        g = self._group.get((trace, span))
        if g is None or self._logged_start[g] or start < self._first_us[g]:
            return False, None
        last = int(self._last_answer[g])
        if last < 0:
            return True, None
        stated = float(self._stated[last])
        if not 0 <= stated <= _LONGEST_MS:  # NaN (none stated) too
            return True, None
        return True, min(start, int(self._us[last]) - round(stated * 1000))

    def stated_ms(self, trace: str, span: str) -> Any:
        """The `duration_ms` the span's last answer line states, when it is a
        `request.end` (None where none does): Dynamo's `latency_ms` is whole
        milliseconds, rounded down, and its line is where it answered."""
        g = self._group.get((trace, span))
        last = -1 if g is None else int(self._last_answer[g])
        return None if last < 0 or self._event[last] != REQUEST_END else self._stated[last]

    def began_work_unended(self, trace: str, span: str) -> bool:
        """Whether the span logged `worker.start` (Dynamo's worker "request received")
        and no line that ends it. Dynamo's workers at INFO level log neither, so a span
        with no start line is not judged."""
        g = self._group.get((trace, span))
        return g is not None and bool(self._unended[g])

    def get(self, trace: str, span: str) -> list[dict[str, Any]]:
        """The span's lines as Jaeger logs, in time order."""
        g = self._group.get((trace, span))
        if g is None:
            return []
        logs = []
        for i in self._order[self._bounds[g]:self._bounds[g + 1]]:
            fields = [tag("event", self._event[i])]
            if present(self._message[i]):
                fields.append(tag("message", self._message[i]))
            fields += [tag(name, values[i]) for name, values in self._details
                       if present(values[i])]
            logs.append({"timestamp": int(self._us[i]), "fields": fields})
        return logs


def _pairs(traces: np.ndarray, spans: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each line's span as a number (in order of first appearance), and the (trace, span)
    of each number: the two ids factorized apart and their codes paired, several times
    cheaper than pairing the strings themselves (a MultiIndex)."""
    trace_code, trace_ids = pd.factorize(traces)
    span_code, span_ids = pd.factorize(spans)
    width = len(span_ids) + 1
    group, first = pd.factorize(trace_code.astype(np.int64) * width + span_code)
    return (np.asarray(group, dtype=np.int64), np.asarray(trace_ids)[first // width],
            np.asarray(span_ids)[first % width])


# No such line in the span (`_group_max`).
_NONE: Final = np.iinfo(np.int64).min


def _group_max(group: np.ndarray, us: np.ndarray, where: np.ndarray, groups: int) -> np.ndarray:
    """Per group, the latest `us` of its lines where `where` holds; `_NONE` for none."""
    out = np.full(groups, _NONE, dtype=np.int64)
    np.maximum.at(out, group[where], us[where])
    return out


def _group_any(group: np.ndarray, where: np.ndarray, groups: int) -> np.ndarray:
    """Per group, whether any of its lines has `where`."""
    return np.bincount(group[where], minlength=groups) > 0


def jaeger_form(ids: pd.Series, *, trace: bool) -> np.ndarray:
    """Each id of ``ids`` (none missing) in its Jaeger form (`trace`: as a trace id, else
    a span id). Ids logged in that form already (nearly all) are tested all at once; each
    other spelling is converted once."""
    text = ids.astype(str)
    forms = text.to_numpy(dtype=object)
    other = ~jaeger_ids.in_jaeger_form(text, trace=trace)
    if other.any():
        convert = jaeger_ids.trace_id if trace else jaeger_ids.span_id
        spelt = text[other]
        converted = {logged: convert(logged) for logged in spelt.unique()}
        forms[other] = spelt.map(converted).to_numpy(dtype=object)
    return forms
