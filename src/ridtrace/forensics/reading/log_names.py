"""Whether a file found in a directory walk is a log: by its name, then its first lines.

A file the user names is always read; a walk reads files named like logs and any file
whose first lines hold a JSON object, and ignores JSON documents, trace exports, binary
data and plain text with a reason the report lists (`ignore_reason`).
"""

from __future__ import annotations

import json
import re

from ridtrace.contract import (
    AUDIT_BY,
    AUDIT_COLUMNS,
    FINDING_COLUMNS,
    FINDING_KINDS,
    TRACE_CSV_COLUMNS,
    audit_keys,
)
from ridtrace.forensics.reading.judge import PREFIXED_RECORD

__all__ = [
    "LOG_LINE_KEYS",
    "NO_JSON_LINES",
    "ignore_reason",
    "json_object_line",
    "named_compressed",
    "named_for_lines",
    "named_like_log",
]

# The reason a walk gives for a text file, before it looks further (`reading.read_on`).
NO_JSON_LINES = "no JSON lines in its first lines"

_PACKED_SUFFIX = r"\.(?:gz|bz2|xz|zst|lz4)"
_PACKED = rf"(?:{_PACKED_SUFFIX})?"
# A rotation: numbered (.1) or dated (logrotate's -20261130, Python's .2026-11-30_10-00).
_ROTATED = r"(?:\.\d+|[.-]\d{4}-?\d{2}-?\d{2}(?:[._-]?\d{2}(?:-?\d{2}){0,2})?)"
# .jsonl .ndjson .json .log, rotated (.1, .log.2, .jsonl-20261130) or compressed (.gz …).
_LOG_NAME = re.compile(
    rf"\.(?:jsonl|ndjson|json|log){_ROTATED}?{_PACKED}$|{_ROTATED}{_PACKED}$|{_PACKED_SUFFIX}$"
)
# Names that promise JSON lines: always read, whatever their first lines hold (.json is
# also a document's name, so it is not one of them).
_LINES_NAME = re.compile(rf"\.(?:jsonl|ndjson|log){_ROTATED}?{_PACKED}$")
_PACKED_NAME = re.compile(rf"{_PACKED_SUFFIX}$")


def json_object_line(line: bytes) -> bool:
    """Whether `line` holds one JSON object, by its first and last characters."""
    text = line.strip()
    return text[:1] == b"{" and text[-1:] == b"}"


# Keys of a log line in the formats that end up in .json files (ridtrace's and Dynamo's
# ``time``; loguru's ``serialize=True``, python-json-logger, Vector, Fluent Bit, Loki's
# ``logcli``, ECS, an OpenTelemetry Collector file exporter's batch): one line holding
# them is a log with one line, to be read, not a report to pass over.
LOG_LINE_KEYS = frozenset({
    "time", "timestamp", "@timestamp", "ts", "asctime", "date",
    "message", "msg", "MESSAGE", "log", "line", "level", "levelname", "severity",
    "record", "resourceLogs",
})


# A ridtrace or Dynamo record inside a JSON document, as an object or as a string's
# escaped text: ``aws logs filter-log-events --output json`` holds each line in an
# event's ``message``, ``gcloud logging read --format=json`` each record in an entry's
# ``jsonPayload``. Such a document is a log fetched whole, not a report beside the logs.
_RIDTRACE_RECORD = re.compile(rb'\\*"schema\\*"\s*:\s*\\*"ridtrace/')
_DYNAMO_TARGET = re.compile(rb'\\*"target\\*"\s*:')
_SPAN_KEY = re.compile(rb'\\*"(?:span_id|trace_id)\\*"\s*:')


def _holds_records(text: bytes) -> bool:
    return _RIDTRACE_RECORD.search(text) is not None or (
        _DYNAMO_TARGET.search(text) is not None and _SPAN_KEY.search(text) is not None)


# A log line's key (`LOG_LINE_KEYS`) as a key, anywhere in a cut line.
_LOG_KEY = re.compile(rb'"(?:' + b"|".join(re.escape(k.encode()) for k in sorted(LOG_LINE_KEYS))
                      + rb')"\s*:')


def _long_record_start(head: bytes) -> bool:
    """Whether a head that is all one line, cut by the sniff, opens a JSON object or an
    array of them that holds records or a log line's keys."""
    text = head.lstrip()
    return _document_start(text) and (_holds_records(text) or _LOG_KEY.search(text) is not None)


def _one_line_document(name: str, data: bytes) -> bool:
    """A whole .json file that is one line of JSON without a log line's keys: a report
    or a trace export (``export jaeger -o logs/traces.json``), not one log line."""
    text = data.strip()
    if not name.lower().endswith(".json") or not text or b"\n" in text or _holds_records(text):
        return False
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # nested deeper than the parser goes: a line
        return False
    return not (isinstance(value, dict) and not LOG_LINE_KEYS.isdisjoint(value))


# The start of the trace file `ridtrace export jaeger` writes (Jaeger's upload format).
_JAEGER_EXPORT = re.compile(rb'\s*\{\s*"data"\s*:\s*\[\s*(?:\{\s*"traceID"\s*:|\])')


# The first line or two of what ridtrace's batch commands write with `-o` (JSON, table,
# CSV): a report saved beside the logs under a log's name (`-o logs/report.log`) was
# read as one, every line bad, and the next run of a clean folder exited 3, and refused
# to write the report again ("one of the logs read").
_CSV_HEADS = [",".join(FINDING_COLUMNS), ",".join(TRACE_CSV_COLUMNS),
              *(",".join((*audit_keys(by), *AUDIT_COLUMNS)) for by in AUDIT_BY)]
_OWN_REPORT = re.compile(
    rb'\{\n  "summary": \{\n'  # analyze, audit --format json
    rb'|\{\n  "id": [^\n]*\n  "matched": '  # trace --format json
    rb'| *ridtrace analyze *\r?\n'  # analyze's table
    # audit's table, with its rows or none (" (none seen)")
    rb'| *deprecated headers by (?:' + "|".join(AUDIT_BY).encode()
    + rb')(?: \(none seen\))? *\r?\n'
    # trace's text: its whole first line (a client's User-Agent holding these words on
    # a log's first line had the log passed over, and its incidents lost).
    rb'|[^\n]*: [0-9]+ matching request\(s\), [0-9]+ shown,(?: most relevant first)? *\r?(?:\n|$)'
    # ... its ID on lines of its own when it is long or the terminal narrow.
    rb'|(?:[^{\n][^\n]*\n){1,16}[0-9]+ matching request\(s\), [0-9]+ shown,'
    + b"".join(b"|" + re.escape(head.encode()) + rb"\r?\n" for head in _CSV_HEADS)
)
OWN_REPORT = "a ridtrace report (analyze, trace, audit or export written with -o), not log lines"

_FINDING_KEYS = frozenset({"kind", "severity", "evidence"})
# The summary ``analyze --follow --format json`` writes to stderr (`Follower.summary`).
_FOLLOW_SUMMARY_KEYS = frozenset({"files", "lines", "bad_lines", "open_at_exit", "window_s"})
_FINDINGS_LOOKED_AT = 200
FINDINGS, MESSAGES = "findings", "messages"


def _own_output(head: bytes, whole: bool) -> str | None:
    """What ridtrace printed, when every first line is that: `FINDINGS` when each is a
    finding ``analyze --follow --format json`` printed (``> logs/findings.jsonl``),
    `MESSAGES` when its stderr's lines are among them (``2> logs/follow.err``: its
    ``ridtrace: …`` lines and its summary). Read, each was a bad line and clean logs an
    incomplete read (exit 3)."""
    # The first 200 lines, split no further: a log's first line already says no.
    lines = head.split(b"\n", _FINDINGS_LOOKED_AT)
    if len(lines) > _FINDINGS_LOOKED_AT:
        lines.pop()  # the rest of the head
    elif not whole and len(lines) > 1:
        lines.pop()  # cut by the sniff
    found = None
    for line in lines:
        if not line.strip():
            continue
        if line.startswith(b"ridtrace: "):
            found = MESSAGES
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):  # RFC 8259 lets a parser limit nesting
            return None
        if not isinstance(value, dict):
            return None
        if value.keys() >= _FOLLOW_SUMMARY_KEYS:
            found = MESSAGES
        elif value.keys() >= _FINDING_KEYS and value["kind"] in FINDING_KINDS:
            found = found or FINDINGS
        else:
            return None
    return found


def named_for_lines(name: str) -> bool:
    """True for a name of JSON lines (.jsonl, .ndjson, .log, rotated or compressed):
    such a file is read whatever it holds."""
    return _LINES_NAME.search(name.lower()) is not None


def named_like_log(name: str) -> bool:
    """True for a log's name: .jsonl, .ndjson, .json, .log, rotated or compressed."""
    return _LOG_NAME.search(name.lower()) is not None


def named_compressed(name: str) -> bool:
    """True for a compressed file's name (.gz, .bz2, .xz, .zst, .lz4)."""
    return _PACKED_NAME.search(name.lower()) is not None


# What follows a JSON array's "[": another value's start, or its end. A text log whose
# lines open with a bracketed time (gunicorn's "[2026-12-03 18:12:37 +0000] [24702]
# [INFO] Booting worker") was called "a JSON document".
_ARRAY_START = re.compile(rb'\[\s*[\[{"\]]')


def _document_start(text: bytes) -> bool:
    """Whether `text` (stripped) opens like a JSON document: an object, or an array."""
    return text[:1] == b"{" or _ARRAY_START.match(text) is not None


def ignore_reason(name: str, head: bytes, *, whole: bool, wrapped: bool = False) -> str | None:
    """Why a file found in a directory walk is plainly not a log, or None to read it.

    `head` is the start of the decoded file (`whole` when it is all of it), unwrapped
    when a shipper's format was known in it (`wrapped`). A file named for JSON lines
    (.jsonl, .ndjson, .log, rotated or compressed) is always read; so is a file with a
    JSON object among its first lines, banners and all; a .json or rotation-named file
    is read too, unless it holds one JSON document (a report) that no shipper wrapped.
    A run of NULs at its top is a hole (copytruncate under a writer that does not
    append): the file is judged by what follows it.
    """
    if head[:1] == b"\x00":
        rest = head.lstrip(b"\x00")
        if rest:
            return ignore_reason(name, rest, whole=whole, wrapped=wrapped)
        if not whole:  # all hole so far: a log's name says read it, else look on (`read_on`)
            return None if named_like_log(name) else NO_JSON_LINES
    if not wrapped and _OWN_REPORT.match(head):
        return OWN_REPORT
    own = None if wrapped else _own_output(head, whole)
    if own == FINDINGS:
        return "ridtrace's findings (analyze --follow --format json), not log lines"
    if own == MESSAGES:
        return "ridtrace's messages and summary (analyze --follow's stderr), not log lines"
    if named_for_lines(name):
        if not wrapped and _JAEGER_EXPORT.match(head):
            return OWN_REPORT  # under any other name, told apart as a trace file below
        return None  # pretty-printed records, a config dump: bad lines, not a skipped file
    if whole and not wrapped and _one_line_document(name, head):
        return "a JSON document, not JSON lines"
    if not whole and _JAEGER_EXPORT.match(head) and b"\n" not in head:
        # Past the sniff, so not judged whole above: a trace file of more than 64 KiB
        # (`export jaeger -o run/traces.json`) made a walk of `run/` incomplete.
        return "a Jaeger trace file, not JSON lines"
    lines = head.split(b"\n")
    if not whole and len(lines) > 1:
        lines.pop()  # cut by the sniff
    # Every line of the head, as docs/cli.md says: the first 200 only passed over a
    # service's .out file whose JSON lines began after a start-up dump of 201 short text
    # lines (pip freeze, a config print), and the walk said clean on logs it never read.
    if any(json_object_line(line) for line in lines):
        return None
    if not whole and len(lines) == 1 and _long_record_start(head):
        # A first line longer than the sniff (an OpenTelemetry Collector file export's
        # batch, a record carrying a big payload): no whole line to judge, and ignored
        # as text, the walk said clean on a log it never read.
        return None
    if any(PREFIXED_RECORD.match(line.strip()) for line in lines):
        # Records behind a prefix the read does not take off (`journalctl -o export`):
        # read, their lines bad, so the result says incomplete; ignored as text, the
        # walk said clean on logs it never read. (A syslog prefix is taken off before
        # this look, `unwrapped_head`.)
        return None
    stripped = head.strip()
    if not stripped:
        return None  # an empty log is still a log: it holds nothing, and says so
    if _document_start(stripped) and b"\n" in stripped and not _holds_records(head):
        # A document that holds records is read: its lines are bad ones, so the result
        # says incomplete; passed over, the walk said clean on a log it never read.
        return "a JSON document, not JSON lines"
    if named_like_log(name):
        return None
    if b"\x00" in head:
        return "binary data, no JSON lines"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if whole or exc.start < len(head) - 4:
            return "binary data, no JSON lines"
    return NO_JSON_LINES
