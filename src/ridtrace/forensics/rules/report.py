"""Run every rule over loaded logs and assemble the report (summary + findings)."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ridtrace.contract import FINDING_KINDS, SEVERITY
from ridtrace.forensics.reading.events import LoadedLogs
from ridtrace.forensics.reading.schema import FINDING_COLUMNS
from ridtrace.forensics.reading.stats import ReadStats, incomplete_reasons
from ridtrace.forensics.records.read import LoadedRequests
from ridtrace.forensics.records.spans import build_requests, requests_from_partials
from ridtrace.forensics.rules.overlap import (
    caller_of,
    client_id_reuse,
    deprecated_header,
    duplicate_in_flight,
)
from ridtrace.forensics.rules.skew import correct_skew
from ridtrace.forensics.rules.streams import crossed_stream, unlinked

RULES = (crossed_stream, duplicate_in_flight, unlinked, client_id_reuse, deprecated_header)


@dataclass
class Report:
    """What `ridtrace analyze` prints: counters and one row per finding."""

    summary: dict[str, Any]
    findings: pd.DataFrame
    requests: pd.DataFrame = field(repr=False)

    @property
    def has_errors(self) -> bool:
        """True when any finding has severity ``error`` (exit code 1)."""
        return bool((self.findings["severity"] == "error").any())


def parse_time(text: str | None) -> pd.Timestamp | None:
    """Parse a --since/--until value (ISO 8601; naive means UTC)."""
    if text is None:
        return None
    stamp = pd.Timestamp(text)
    utc: pd.Timestamp = (
        stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    )
    return utc


def select_window(
    requests: pd.DataFrame, since: pd.Timestamp | None, until: pd.Timestamp | None
) -> pd.DataFrame:
    """Keep requests whose [start, end] meets [since, until): whole, never clipped."""
    if since is None and until is None:
        return requests
    keep = np.ones(len(requests), dtype=bool)
    if since is not None:
        keep &= (requests["end"] >= since).to_numpy()
    if until is not None:
        keep &= (requests["start"] < until).to_numpy()
    kept: pd.DataFrame = requests[keep]
    return kept


def count_requests(requests: pd.DataFrame) -> int:
    """Callers: frontend requests, plus callers seen only through worker spans."""
    return int(caller_of(requests).nunique())


def analyze(
    logs: LoadedLogs, *, since: pd.Timestamp | None = None, until: pd.Timestamp | None = None
) -> Report:
    """All checks over loaded logs; findings sorted errors first, then by time.

    With `since`/`until`, pass the same window to the read
    (`ridtrace.forensics.reading.events.read_sources`) so that lines are counted in it.
    """
    requests = select_window(build_requests(logs.events), since, until)
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
    return analyze_requests(requests, logs.stats, lines=lines)


def analyze_read(
    read: LoadedRequests,
    *,
    since: pd.Timestamp | None = None,
    until: pd.Timestamp | None = None,
) -> Report:
    """All checks over a read's per-span partials (what `ridtrace analyze` runs)."""
    requests = select_window(requests_from_partials(read.partials, read.files), since, until)
    return analyze_requests(requests, read.stats, lines=read.window_lines)


def analyze_requests(requests: pd.DataFrame, stats: ReadStats, *, lines: int | None) -> Report:
    """All checks over a requests frame (already windowed) and the read's counters.

    Every engine ends here: clock skew is corrected, then the rules run once, on one
    requests frame. ``lines`` is the count of lines in a --since/--until window, None
    for all lines read.
    """
    requests, offsets = correct_skew(requests)
    # Who each span works for, once for every rule that asks.
    requests = requests.assign(caller=caller_of(requests))
    frames = [rule(requests) for rule in RULES]
    findings = pd.concat(frames, ignore_index=True)
    if not findings.empty:
        findings["time"] = pd.to_datetime(findings["time"], utc=True)
        order = findings["severity"].map({"error": 0}).fillna(1)
        findings = findings.assign(_o=order).sort_values(["_o", "time"], kind="stable")
        findings = findings.drop(columns="_o").reset_index(drop=True)
    n_requests = count_requests(requests)
    summary: dict[str, Any] = {
        "files": stats.files,
        "lines": stats.lines if lines is None else lines,
        "bad_lines": stats.bad_lines,
        "requests": n_requests,
        "spans": len(requests),
    }
    counts = findings["kind"].value_counts() if not findings.empty else pd.Series(dtype=int)
    for kind in FINDING_KINDS:
        summary[kind] = int(counts.get(kind, 0))
    summary["errors"] = sum(summary[k] for k in FINDING_KINDS if SEVERITY[k] == "error")
    summary["bad_line_samples"] = [
        {"file": s.file, "line": s.line, "reason": s.reason} for s in stats.samples
    ]
    summary["ignored_files"] = [{"file": n.file, "reason": n.reason} for n in stats.ignored_files]
    summary["unreadable_files"] = [
        {"file": n.file, "reason": n.reason} for n in stats.unreadable_files
    ]
    summary["clock_offsets_ms"] = {name: us / 1000.0 for name, us in sorted(offsets.items())}
    reasons = incomplete_reasons(stats, requests=len(requests))
    summary["incomplete"] = bool(reasons)
    summary["incomplete_reasons"] = reasons
    return Report(summary=summary, findings=findings, requests=requests)


def _iso(value: Any) -> str | None:
    if value is None or value is pd.NaT or (isinstance(value, float) and value != value):
        return None
    return str(pd.Timestamp(value).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))


def _record(rec: tuple[Any, ...]) -> dict[str, Any]:
    item = dict(zip(FINDING_COLUMNS, rec, strict=True))
    item["time"] = _iso(item["time"])
    for key in ("request_id", "x_request_id", "span_id", "detail"):
        if not isinstance(item[key], str):  # pandas turns a missing string into NaN
            item[key] = None
    return item


def finding_records(findings: pd.DataFrame) -> list[dict[str, Any]]:
    """Findings as plain JSON-ready dicts (ISO times, None for missing ids)."""
    return [_record(rec) for rec in findings.itertuples(index=False)]


def report_json(report: Report) -> dict[str, Any]:
    """The stable JSON document: ``{"summary": {...}, "findings": [...]}``."""
    return {"summary": report.summary, "findings": finding_records(report.findings)}


def report_csv(report: Report) -> str:
    """Findings as CSV; evidence as ``file:line`` joined by ``;``."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(FINDING_COLUMNS)
    for item in finding_records(report.findings):
        item["evidence"] = ";".join(f"{e['file']}:{e['line']}" for e in item["evidence"])
        writer.writerow([item[c] if item[c] is not None else "" for c in FINDING_COLUMNS])
    return buf.getvalue()
