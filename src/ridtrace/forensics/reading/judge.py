"""One line judged in Python: the few lines DuckDB's reader could not explain.

DuckDB's JSON parser rejects some valid JSON (a lone surrogate escape such as
``"\\udc80"``, which RFC 8259 allows), and a rejected line only shows up as an empty
row. Those lines, and only those, are parsed here with the standard library, which
follows the RFC: a valid line becomes a row, anything else a bad line with a reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ridtrace.forensics.reading.crash_holes import (
    CRASH_HOLE_BYTES,
    copy_truncated,
    hole_shown,
    inner_hole,
)
from ridtrace.forensics.reading.json_start import cannot_be_json
from ridtrace.forensics.reading.other_loggers import (
    SIGNATURE_FIELDS,
    other_epoch_time,
    other_time_key,
    structlog_record,
)
from ridtrace.forensics.reading.packed_lines import (
    BAD_RECORD_KEY,
    BOM,
    DECODE,
    NESTED_MARK,
    array_of_objects,
    back_to_back,
    brackets_pair_up,
    cr_separated,
)
from ridtrace.forensics.reading.record_time import parse_time
from ridtrace.forensics.surrogates import spell_lone_surrogates


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return spell_lone_surrogates(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return spell_lone_surrogates(
            json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        )
    return str(value)


def _wide_text(text: bytes) -> str | None:
    """The encoding of a line of UTF-16 or UTF-32 text cut at its newline byte (a NUL
    beside nearly every byte, or three in every four), or None."""
    body = text.strip(b"\x00\r")
    for width, name in ((4, "UTF-32"), (2, "UTF-16")):
        if len(body) < 2 * width:
            continue
        columns = [body[i::width] for i in range(width)]
        nul = sum(c.count(0) >= 0.9 * len(c) for c in columns)
        if nul >= width - 1 and body.count(0) < len(body):
            return name
    return None


# A time, then a level: how text loggers open a line (Dynamo's READABLE format,
# tracing-subscriber's and Python logging's defaults, klog's "I1002 14:03:11.482913").
_TEXT_LOG_LINE = re.compile(
    rb"(?:\x1b\[[0-9;]*m)*\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}.{0,60}?"
    rb"\b(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|FATAL)\b"
    rb"|[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+ ",
    re.IGNORECASE,
)
TEXT_LOG_LINE = "a text log line, not JSON (Dynamo writes JSON lines with DYN_LOGGING_JSONL=1)"
# A log record as ridtrace, Dynamo and tracing-subscriber write it (the time first),
# after text a shipper put before it that the read does not take off (`unwrap.PREFIX`
# takes syslog's, kubectl's and others'): ``journalctl -o export``'s ``MESSAGE=``, a
# prefix of the shipper's own.
PREFIXED_RECORD = re.compile(
    rb'[^{\s][^{]*\{\s*"(?:time|timestamp)"\s*:\s*"\d{4}-\d{2}-\d{2}[^\n]*\}\s*$'
)
PREFIXED_RECORD_LINE = "a JSON record after a text prefix ridtrace does not take off"
# The hint only where the prefix is journald's: an unknown shipper's prefix was sent to
# journalctl too, which it never came from.
_JOURNAL_EXPORT_FIELD = b"MESSAGE="
JOURNAL_EXPORT_LINE = (
    f"{PREFIXED_RECORD_LINE} (journalctl -o export? journalctl -o json is read as it is)"
)
# `journalctl -o json-pretty` writes each entry over many lines, a field a line
# (`\t"MESSAGE" : "{\"time\":…}",`, journald's field names in capitals): every line was
# "not JSON", with no word of the export that is read as it is.
_JOURNAL_PRETTY_FIELD = re.compile(rb'"_{0,2}[A-Z][A-Z0-9_]*" : ')
JOURNAL_PRETTY_LINE = (
    "a journal entry's field on a line of its own (journalctl -o json-pretty? "
    "journalctl -o json is read as it is)"
)


# journalctl -o json writes a field over 4096 bytes as null unless run with --all, so a
# long line (a traceback, an error with a body in it) is not in the export at all. The
# journald unwrapper turns such an entry into this mark, no JSON, judged here.
JOURNAL_LEFT_OUT_MARK = b"\x1eridtrace: journald MESSAGE null"
JOURNAL_LEFT_OUT = "MESSAGE null: journalctl -o json leaves out a line over 4096 bytes"
JOURNAL_LEFT_OUT_FILE = (
    "journalctl -o json left out its lines over 4096 bytes (MESSAGE null, see its bad "
    "lines): export it again with journalctl --all -o json"
)

# journald drops a service's lines past its rate limit (RateLimitBurst=) and writes one
# entry of its own in their place ("Suppressed 3184 messages from frontend.service"),
# which `journalctl -u UNIT` exports with the unit's lines. The journald unwrapper turns
# it into this mark and its message; the lines it stands for were never recorded.
JOURNAL_DROPPED_MARK = b"\x1eridtrace: journald dropped: "
JOURNAL_DROPPED = "journald dropped lines under its rate limit"
JOURNAL_DROPPED_FILE = (
    "journald dropped lines of this service under its rate limit (see its bad lines): "
    "they were never recorded; raise RateLimitBurst= in journald.conf or "
    "LogRateLimitBurst= on the unit"
)

# A query's answer saved one page of (an Elasticsearch `_search` response holds `size`
# hits, 10 unless asked, of its `hits.total`; the AWS CLI's events end with a NextToken):
# the document's unwrapper ends such an answer with this mark and what it holds. The
# lines past the page were never fetched.
PAGE_MARK = b"\x1eridtrace: one page: "
# Between the mark's notice and the page's records, where an answer a line holds both
# (`reading.search_answer`): the records are read, the line still a bad one.
PAGE_RECORDS = b"\x1e"
PAGE_ONLY = "one page of the query's answer"


def page_line(held: int, total: int, *, at_least: bool, what: str = "hits") -> bytes:
    """The line an unwrapper gives for an answer that holds `held` of the `total` its
    query matched (`at_least`: the total is a lower bound): a bad line, `PAGE_ONLY`."""
    return PAGE_MARK + f"{held} of {'at least ' if at_least else ''}{total} {what}".encode()
PAGE_ONLY_FILE = (
    "one page of a query's answer, not all the lines it matched (see its bad lines): "
    "fetch them all (Elasticsearch: a size over the total, or search_after; the AWS CLI: "
    "without --max-items or --no-paginate) and analyze that"
)


TRUNCATED_JSON = "truncated JSON"
# A record cut short this long is a line limit's work (rsyslog's 8 KiB, a runtime's 16 KiB
# split left unjoined, journald's 48 KiB), not a crash's torn last line: every record as
# long is lost the same way, and those are the ones with an error's details.
LIMIT_CUT_BYTES = 4096
# The same of a record a batch carried (a collector's body cut at its `max_log_size`).
LIMIT_CUT_RECORD = f"{TRUNCATED_JSON} ({LIMIT_CUT_BYTES // 1024} KiB or more)"
NESTED_TOO_DEEPLY = "JSON nested too deeply"
NESTED_FILE = (
    "a line of JSON nested deeper than the parser follows (see its bad lines): valid JSON, "
    "and a record in it, if any, was not read"
)
# The rest of a long record whose start is in another file: the live log after a
# rotation fell between the parts a runtime cut the record into (kubelet's CRI `P` parts
# in the rotated file, the `F` part in the live one). Often the error an incident is
# about, and one bad line under the 1 %.
HEADLESS_RECORD = "the end of a JSON record, its start missing"
HEADLESS_FILE = (
    "a record of 4 KiB or more whose start is missing is not read (see its bad "
    "lines): a rotation between the parts a runtime cut a long line into; read the parts "
    "joined oldest first, <(cat OLDER NEWER)"
)
LIMIT_CUT_FILE = (
    f"a record of {LIMIT_CUT_BYTES // 1024} KiB or more cut short (see its bad lines): a line "
    "limit (a syslog daemon's, a shipper's) loses every record as long"
)


def _malformed(text: bytes) -> str:
    if text.startswith(NESTED_MARK):
        return NESTED_TOO_DEEPLY
    if text.startswith(PAGE_MARK):
        return f"{PAGE_ONLY}: {text[len(PAGE_MARK):].decode('utf-8', 'replace').strip()}"
    if text.startswith(JOURNAL_LEFT_OUT_MARK):
        return JOURNAL_LEFT_OUT
    if text.startswith(JOURNAL_DROPPED_MARK):
        notice = text[len(JOURNAL_DROPPED_MARK):].decode("utf-8", "replace").strip()
        return f"{JOURNAL_DROPPED}: {notice}"
    if b"\x00" in text:
        # Where the reader took a UTF-16 or UTF-32 file's bytes as they are (`--follow`).
        wide = _wide_text(text)
        return f"{wide} text, not UTF-8" if wide else "binary data"
    try:
        text.decode("utf-8")
    except UnicodeDecodeError:
        return _cut_inside_a_character(text) or INVALID_UTF8
    # A byte-order mark before the line's records is no text before them (`cat` of a
    # file Windows wrote): two records after one were "a record after a text prefix".
    stripped = text.strip().removeprefix(_UTF8_BOM).strip()
    if stripped[:1] == b"{" and stripped[-1:] != b"}":
        return TRUNCATED_JSON
    if PREFIXED_RECORD.match(stripped):
        # Before the text-logger check: the prefix often opens with a time, and the
        # record holds a level, so "set DYN_LOGGING_JSONL=1" was the advice given.
        if stripped.startswith(_JOURNAL_EXPORT_FIELD):
            return JOURNAL_EXPORT_LINE
        return PREFIXED_RECORD_LINE
    if _JOURNAL_PRETTY_FIELD.match(stripped):
        return JOURNAL_PRETTY_LINE
    if _TEXT_LOG_LINE.match(stripped):
        # Dynamo's default (READABLE) output, or any text logger's: every line of such a
        # file said only "not JSON", as if the file were damaged.
        return TEXT_LOG_LINE
    return "not JSON"


_UTF8_BOM = "\ufeff".encode()
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))  # the 2nd to 4th bytes of a UTF-8 character


def _cut_inside_a_character(text: bytes) -> str | None:
    """`TRUNCATED_JSON` or `HEADLESS_RECORD` for a record whose only invalid UTF-8 is a
    character cut at its end or start: byte limits (containerd's 16 KiB parts, journald's
    line-max, a syslog daemon's) cut inside a prompt's non-ASCII text as often as not.
    It was "invalid UTF-8", its file not named, where an ASCII record cut at the same
    byte made the read incomplete."""
    stripped = text.strip()
    core = stripped.lstrip(_CONTINUATION_BYTES)
    headless = len(core) < len(stripped)
    if len(stripped) - len(core) > 3:
        return None  # more than one character's rest: not a cut
    try:
        core.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.reason != "unexpected end of data" or error.end != len(core):
            return None  # invalid inside, not only cut short
        core = core[:error.start]
        try:
            core.decode("utf-8")
        except UnicodeDecodeError:
            return None
        return TRUNCATED_JSON if core[:1] == b"{" and not headless else None
    if headless and core[-1:] == b"}" and len(stripped) >= LIMIT_CUT_BYTES:
        return HEADLESS_RECORD
    return None


def judge_line(text: bytes, fields: Sequence[str]) -> dict[str, Any] | str:
    """The line's fields (strings, ``time`` a datetime), or the reason it is bad."""
    if cannot_be_json(text):
        # A text log's line: building the parser's error was half of judging it.
        return _malformed(text)
    # NULs before a line are no part of it: the hole a copy-and-truncate leaves when its
    # writer does not append (its next write lands at its old offset). The record after
    # the hole is whole; it was a bad line ("binary data") after every such rotation.
    try:
        decoded = text.lstrip(b"\0").decode("utf-8", errors="strict")
        obj = DECODE.decode(decoded.strip().removeprefix(BOM).strip())
    except (UnicodeDecodeError, ValueError):
        return _malformed(text)
    except RecursionError:
        # RFC 8259 lets a parser limit nesting; the standard library's is the
        # interpreter's recursion limit (about a thousand levels), DuckDB's lower still.
        # Brackets that do not pair up are no JSON however deep: a torn line of 1,500
        # '[' was "valid JSON nested too deeply", and clean logs an incomplete read.
        return NESTED_TOO_DEEPLY if brackets_pair_up(decoded) else _malformed(text)
    return _row(obj, fields)


_EPOCH = re.compile(r"\s*-?\d+(?:\.\d+)?\s*")
EPOCH_TIME = "invalid time (an epoch number; RFC 3339 text expected)"


NOT_AN_OBJECT = "not a JSON object"
INVALID_UTF8 = "invalid UTF-8"


def _row(obj: Any, fields: Sequence[str]) -> dict[str, Any] | str:
    if not isinstance(obj, dict):
        return NOT_AN_OBJECT
    unreadable = obj.get(BAD_RECORD_KEY)
    if len(obj) == 1 and isinstance(unreadable, str) and unreadable in _UNREADABLE_RECORDS:
        # Only a reason the unwrapper gives: an application's own line of this shape
        # could only say what a line of its own making says anyway (a cut or a deep
        # record makes the read incomplete as well), and no text of its choosing.
        return str(unreadable)
    # The signature fields as the SQL scan reads them (`scan.source_sql`).
    row: dict[str, Any] = {name: _text(obj.get(name)) for name in (*fields, *SIGNATURE_FIELDS)}
    key = "time"
    if row.get(key) is None and structlog_record(row):  # its time in `timestamp`
        key = "timestamp"
    elif row.get(key) is None:
        key = other_time_key(row) or key
    time = row.get(key)
    if time is None:
        return "missing time"
    parsed = parse_time(time) or other_epoch_time(row)
    if parsed is None:
        raw = obj.get(key)
        # Seconds, milliseconds or nanoseconds: a number does not say which, nor does
        # one written as a string ("1790949900123", as some shippers and loggers do).
        if (isinstance(raw, (int, float)) and not isinstance(raw, bool)) or (
            isinstance(raw, str) and _EPOCH.fullmatch(raw) is not None
        ):
            return EPOCH_TIME
        return "invalid time"
    row["time"] = parsed
    return row


Judged = tuple[list[dict[str, Any]], str | None, int]

# What a batch's record of text may be judged (`text_reason`): the reasons a plain line
# of that text gets, but none quoting the text itself (a page's or journald's notice).
_TEXT_REASONS = frozenset({"not JSON", "binary data", INVALID_UTF8, TEXT_LOG_LINE,
                           PREFIXED_RECORD_LINE, JOURNAL_EXPORT_LINE, JOURNAL_PRETTY_LINE,
                           NOT_AN_OBJECT, NESTED_TOO_DEEPLY})
# The reasons `unwrap_parts.batched_record` gives a batch's record it could not read.
_UNREADABLE_RECORDS = frozenset({TRUNCATED_JSON, LIMIT_CUT_RECORD, *_TEXT_REASONS})


def text_reason(text: bytes) -> str:
    """Why a batch's record that is text (no JSON object) is a bad one, as its plain line
    would be judged: a collector's body holding a banner or a text logger's line was
    "missing time", which sent the reader looking for a time the line never had."""
    verdict = judge_line(text, ())
    return verdict if isinstance(verdict, str) and verdict in _TEXT_REASONS else "not JSON"


def judge_records(
    text: bytes, fields: Sequence[str], *, first_line: bool = False
) -> Judged:
    """The records of a line (`judge_line`'s), the reason it is bad (None when good), and
    how many records it held (1 unless several were on it: `lines` counts records).

    A line may hold several JSON objects back to back: ``cat a.jsonl b.jsonl`` where
    ``a.jsonl`` lacks its last newline (a log copied while written, a hand-made file)
    joins two records. Each is read, cited at that line; the line was "not JSON", and a
    request whose end was on it looked cut off (a false Unlinked finding).

    A run of NUL bytes before a record is the hole a crash leaves in a log (the file's
    size was written, the lines in the page cache were not), then the restarted
    service's first line. The record is read, and the line is still a bad one: the
    lines the hole stands for are lost. On a file's first line it is copy-and-truncate's
    hole instead (`copy_truncated`): the record is read and the line is good.
    """
    if text.startswith(PAGE_MARK) and PAGE_RECORDS in text[len(PAGE_MARK):]:
        notice, _, page = text[len(PAGE_MARK):].partition(PAGE_RECORDS)
        rows, _, records = _records(page, fields) if page.strip() else ([], None, 0)
        return rows, f"{PAGE_ONLY}: {notice.decode('utf-8', 'replace').strip()}", records
    inner = inner_hole(text)
    if inner:
        # What follows the hole's last NUL is read when it is whole records (the hole
        # ended where a line started); the line stays a bad one either way.
        tail = text[text.rindex(b"\x00") + 1:]
        rows, reason, records = _records(tail, fields) if tail.strip() else ([], None, 1)
        return (rows if reason is None else [],
                f"{inner} NUL bytes inside the line (lines lost in a crash?)", records)
    if copy_truncated(text, first_line=first_line):
        return _records(text.lstrip(b"\x00"), fields)
    body = text.lstrip(b"\x00")
    hole = len(text) - len(body)
    if hole < CRASH_HOLE_BYTES:  # a NUL or two is binary data, as any other byte
        return _records(text, fields)
    if not body.strip(b"\x00\r\t "):
        return [], f"{hole_shown(hole)} NUL bytes (lines lost in a crash?)", 1
    rows, reason, records = _records(body, fields)
    nuls = hole_shown(hole)
    if reason is None:
        return rows, f"{nuls} NUL bytes before its record (lines lost in a crash?)", records
    return [], f"{nuls} NUL bytes, then {reason}", records


def _records(text: bytes, fields: Sequence[str]) -> Judged:
    verdict = judge_line(text, fields)
    if isinstance(verdict, dict):
        return [verdict], None, 1
    if verdict == NOT_AN_OBJECT:
        batch = array_of_objects(text)
        if batch is None:
            return [], verdict, 1
        return _each_read(batch, fields, f"an array of {len(batch)} JSON objects on one line")
    if verdict != "not JSON":
        return [], verdict, 1
    objects = back_to_back(text.decode("utf-8").strip().removeprefix(BOM))
    if objects is None:
        return [], cr_separated(text) or _headless(text) or verdict, 1
    return _each_read(objects, fields, f"{len(objects)} JSON objects on one line")


def _headless(text: bytes) -> str | None:
    """`HEADLESS_RECORD` for a long line no record that ends like one (its other reading,
    records back to back or CR-separated, ruled out first)."""
    stripped = text.strip()
    if len(stripped) >= LIMIT_CUT_BYTES and stripped[-1:] == b"}":
        return HEADLESS_RECORD
    return None


def _each_read(objects: list[Any], fields: Sequence[str], what: str) -> Judged:
    rows = [_row(obj, fields) for obj in objects]
    good = [row for row in rows if isinstance(row, dict)]
    bad = [row for row in rows if isinstance(row, str)]
    if not bad:
        return good, None, len(objects)
    # The line is a bad one; its good records are read all the same. Named by a reason
    # that makes the read incomplete where one of them has it (`suspects`).
    many = "one" if len(bad) == 1 else f"{len(bad)} of them"
    shown = next((r for r in bad if r in (LIMIT_CUT_RECORD, NESTED_TOO_DEEPLY)), bad[0])
    return good, f"{what}, {many} {shown}", len(objects)
