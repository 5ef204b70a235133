"""Run every rule over loaded logs and assemble the report (summary + findings)."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import orjson
import pandas as pd

from ridtrace.contract import FINDING_COLUMNS, FINDING_KINDS, SEVERITY
from ridtrace.forensics.printable import csv_cell, csv_escaped, formula_guarded, json_escaped
from ridtrace.forensics.reading.events import LoadedLogs
from ridtrace.forensics.reading.stats import ReadStats, completeness, read_notes
from ridtrace.forensics.records.read import LoadedRequests
from ridtrace.forensics.records.spans import build_requests, requests_from_partials
from ridtrace.forensics.rfc3339 import is_iso8601
from ridtrace.forensics.rules.columns import SpanColumns, lookup, span_columns
from ridtrace.forensics.rules.deprecated import deprecated_header, find_deprecated_header
from ridtrace.forensics.rules.findings import (
    FindingColumns,
    concat,
    finding_dicts,
    findings_frame,
    paused_gc,
)
from ridtrace.forensics.rules.instants import unseen_overlaps
from ridtrace.forensics.rules.overlap import (
    caller_of,
    client_id_reuse,
    duplicate_in_flight,
    find_client_id_reuse,
    find_duplicate_in_flight,
    open_holders_reason,
    open_id_holders,
)
from ridtrace.forensics.rules.skew import apply_offsets, shift_spans, span_offsets
from ridtrace.forensics.rules.streams import (
    crossed_stream,
    find_crossed_stream,
    find_unlinked,
    unlinked,
)
from ridtrace.forensics.rules.window import window_requests

# The rules, requests frame in, findings frame out; and the same rules on converted
# columns, in the same order, as `analyze_requests` runs them.
RULES = (crossed_stream, duplicate_in_flight, unlinked, client_id_reuse, deprecated_header)
_FIND = (find_crossed_stream, find_duplicate_in_flight, find_unlinked, find_client_id_reuse,
         find_deprecated_header)
_BY_OUTPUT = (find_crossed_stream, find_unlinked)  # they compare fingerprints across requests
Finder = Callable[[SpanColumns], FindingColumns]
_LAST = np.iinfo(np.int64).max


@dataclass
class Report:
    """What `ridtrace analyze` prints: counters and one row per finding.

    ``found`` holds the findings column-wise, sorted (errors first, then by time);
    ``findings`` is the same as a DataFrame (`FINDING_COLUMNS`) and ``requests`` the
    requests on one clock, both built on first use: the CLI needs neither.
    """

    summary: dict[str, Any]
    found: FindingColumns
    source: pd.DataFrame = field(repr=False)
    offsets_us: dict[str, int] = field(default_factory=dict)
    # Every line read, a --since/--until window's or not (the summary's `lines` are the
    # window's): a window that holds none of them is no read that found nothing.
    lines_read: int = 0

    @cached_property
    def requests(self) -> pd.DataFrame:
        """The requests the rules saw: skew corrected, with each span's ``caller``."""
        corrected = apply_offsets(self.source, self.offsets_us)
        return corrected.assign(caller=caller_of(self.source))

    @cached_property
    def findings(self) -> pd.DataFrame:
        """The findings as a DataFrame with the columns of `FINDING_COLUMNS`."""
        return findings_frame(self.found)

    @property
    def has_errors(self) -> bool:
        """True when any finding has severity ``error`` (exit code 1)."""
        return any(SEVERITY[kind] == "error" for kind in set(self.found.kind))


def parse_time(text: str | None, *, bound: str | None = None) -> pd.Timestamp | None:
    """Parse a --since/--until value (ISO 8601; naive means UTC).

    `bound` (``since`` / ``until``): a time beyond the nanosecond timestamps the read
    compares in (years 1677–2262) bounds nothing on its open side (``--since
    0001-01-01``: all) and is clamped to the range on the other (``--since 9999``: none).
    """
    if text is None:
        return None
    if not is_iso8601(text):
        raise ValueError(f"not an ISO 8601 time: {text!r}")
    stamp = pd.Timestamp(text)
    utc: pd.Timestamp = (
        stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    )
    lowest: pd.Timestamp = pd.Timestamp.min.tz_localize("UTC")
    highest: pd.Timestamp = pd.Timestamp.max.tz_localize("UTC")
    if bound is not None and not lowest <= utc <= highest:
        if (utc < lowest) == (bound == "since"):
            return None
        return lowest if utc < lowest else highest
    # Log times are kept to the microsecond, and the window is compared in them: a bound
    # between two microseconds is the next one (the read floors it, which moved
    # --until 10:00:00.1000001 before a request that started at 10:00:00.100000).
    return utc.ceil("us") if utc.nanosecond and utc < highest.floor("us") else utc


def _found(find: Finder, spans: SpanColumns, wider: SpanColumns | None) -> FindingColumns:
    """`find`'s findings about `spans`, an output rule's judged among `wider` too."""
    if wider is None or find not in _BY_OUTPUT:
        return find(spans)
    found = find(wider)
    own = set(spans.texts("span_id", np.arange(len(spans.span))))
    return found.take(np.flatnonzero([span in own for span in found.span_id]))


def count_requests(requests: pd.DataFrame) -> int:
    """Callers: frontend requests, plus callers seen only through worker spans; keyed
    as `analyze_requests` counts them, a span id in several traces as many requests."""
    spans = span_columns(requests)
    return int(lookup(spans.span_codes, spans.caller()).sum())


def analyze(
    logs: LoadedLogs, *, since: pd.Timestamp | None = None, until: pd.Timestamp | None = None
) -> Report:
    """All checks over loaded logs; findings sorted errors first, then by time.

    With `since`/`until`, pass the same window to the read
    (`ridtrace.forensics.reading.events.read_sources`) so that lines are counted in it.
    """
    every = build_requests(logs.events)
    window = window_requests(every, since, until)
    lines = logs.window_lines
    if lines is None and (since is not None or until is not None):
        # Read without the window: every valid line is an event unless the read was lean.
        times = logs.events["time"]
        keep = np.ones(len(times), dtype=bool)
        if since is not None:
            keep &= (times >= since).to_numpy()
        if until is not None:
            keep &= (times < until).to_numpy()
        lines = int(keep.sum())
    return analyze_requests(window.requests, logs.stats, lines=lines, read_spans=len(every),
                            offsets=window.offsets, with_outputs=window.with_outputs)


def analyze_read(
    read: LoadedRequests,
    *,
    since: pd.Timestamp | None = None,
    until: pd.Timestamp | None = None,
) -> Report:
    """All checks over a read's per-span partials (what `ridtrace analyze` runs)."""
    every = requests_from_partials(read.partials, read.files)
    window = window_requests(every, since, until)
    return analyze_requests(window.requests, read.stats, lines=read.window_lines,
                            read_spans=len(every), offsets=window.offsets,
                            with_outputs=window.with_outputs)


def analyze_requests(
    requests: pd.DataFrame, stats: ReadStats, *, lines: int | None, read_spans: int | None = None,
    offsets: dict[str, int] | None = None, with_outputs: pd.DataFrame | None = None,
) -> Report:
    """All checks over a requests frame (already windowed) and the read's counters.

    Every engine ends here: the frame is converted to codes once, clock skew is
    corrected, then the rules run once each. ``lines`` is the count of lines in a
    --since/--until window, None for all lines read; ``read_spans`` the spans of the
    whole read (a window with no request in it is an answer, not an incomplete read);
    ``offsets`` the clock offsets to use (`window_requests`'), None to estimate them;
    ``with_outputs`` the window's requests with those outside it that share an output
    with them (`rules.window.Window`), which the output rules compare with.
    """
    with paused_gc():
        spans = span_columns(requests)
        if offsets is None:
            offsets = span_offsets(spans)
        spans = shift_spans(spans, offsets)
        wider = None if with_outputs is None else shift_spans(span_columns(with_outputs), offsets)
        found = concat([_found(find, spans, wider) for find in _FIND])
        errors_first = np.array([SEVERITY[k] != "error" for k in found.kind], dtype=bool)
        time_key = np.where(found.time_us == np.iinfo(np.int64).min, _LAST, found.time_us)
        found = found.take(np.lexsort((time_key, errors_first)))
    caller = spans.caller()
    counts = Counter(found.kind)
    summary: dict[str, Any] = {
        "files": stats.files,
        "lines": stats.lines if lines is None else lines,
        "bad_lines": stats.bad_lines,
        "requests": int(lookup(spans.span_codes, caller).sum()),
        "spans": len(requests),
    }
    for kind in FINDING_KINDS:
        summary[kind] = counts.get(kind, 0)
    summary["errors"] = sum(summary[k] for k in FINDING_KINDS if SEVERITY[k] == "error")
    summary.update(read_notes(stats))
    summary["clock_offsets_ms"] = {name: us / 1000.0 for name, us in sorted(offsets.items())}
    read_all = len(requests) if read_spans is None else read_spans
    summary.update(completeness(stats, requests=read_all))
    if (unseen := unseen_overlaps(spans)) is not None:
        summary.update(incomplete=True, incomplete_reasons=[*summary["incomplete_reasons"], unseen])
    closing = np.asarray(requests["closing"].fillna(True).to_numpy(), dtype=bool)
    if open_held := open_id_holders(spans, closing):
        summary.update(incomplete=True, incomplete_reasons=[
            *summary["incomplete_reasons"], open_holders_reason(open_held)])
    return Report(summary=summary, found=found, source=requests, offsets_us=offsets,
                  lines_read=stats.lines)


def report_json(report: Report) -> dict[str, Any]:
    """The stable JSON document: ``{"summary": {...}, "findings": [...]}``."""
    return {"summary": report.summary, "findings": finding_dicts(report.found)}


def report_json_text(report: Report) -> str:
    """`report_json` as indented JSON text, written by orjson.

    A lone surrogate (valid in a JSON log line, not in UTF-8) falls back to the
    standard library, which escapes it.
    """
    with paused_gc():
        doc = report_json(report)
        try:
            return json_escaped(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode())
        except TypeError:
            return json.dumps(doc, indent=2)


def report_csv(report: Report) -> str:
    """Findings as CSV; evidence as ``file:line`` joined by ``;``."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(FINDING_COLUMNS)
    found = report.found
    with paused_gc():
        writer.writerows(zip(
            found.kind, [SEVERITY[k] for k in found.kind], _inert(_blank(found.request_id)),
            _inert(_blank(found.x_request_id)), _inert(_blank(found.span_id)),
            _blank(found.iso_times()), _inert(found.detail),
            [_evidence_cell(items) for items in found.evidence],
            strict=True,
        ))
    return buf.getvalue()


def _evidence_cell(items: list[dict[str, Any]]) -> str:
    """``file:line`` joined by ``;``, a ``;`` in a file name written ``\\u003b`` (and
    every other character `csv_cell` escapes), so the cell splits back on ``;``; the
    line is after the last ``:``."""
    return formula_guarded(";".join(f"{csv_escaped(str(e['file']), ';')}:{e['line']}"
                                    for e in items))


def _blank(values: list[str | None]) -> list[str]:
    return ["" if v is None else v for v in values]


def _inert(values: list[str]) -> list[str]:
    """Request ids, and the details that quote them, are the clients' text (`csv_cell`)."""
    return [csv_cell(v) for v in values]
