"""Records inside the bad lines of a file that is not wrapped: another system's lines
after a service's own.

A file is unwrapped when its first lines are wrapped (`reading.unwrap`). One that opens
with plain lines and goes on with a container's or a shipper's (``cat frontend.jsonl
0.log``, an aggregated file two services write) is read as plain, and each wrapped
record after the plain ones was a bad line: under the 1 % of bad lines a read may have,
an Unlinked error there was dropped and the run said clean. These functions take such a
line's wrapping off, one line at a time; they run on bad lines only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence

from ridtrace.forensics.reading.documents import entry_object
from ridtrace.forensics.reading.judge import NESTED_TOO_DEEPLY, Judged, judge_records
from ridtrace.forensics.reading.line_prefixes import behind_prefixes
from ridtrace.forensics.reading.loguru_json import LoguruJsonUnwrapper, loguru_record
from ridtrace.forensics.reading.nesting import TracingJsonUnwrapper, flat_tracing, has_nesting
from ridtrace.forensics.reading.packed_lines import NESTED_MARK, TEXT_DECODE, brackets_pair_up
from ridtrace.forensics.reading.scan import known_record
from ridtrace.forensics.reading.shippers import (
    ENVELOPE_FIELDS,
    envelope_record,
    is_record,
    parsed_line,
)
from ridtrace.forensics.reading.unwrap_parts import UTF8_BOM, carried_line, json_object, json_value

__all__ = ["judge_unwrapped", "record_inside", "records_inside"]

# A file's valid JSON lines of no known format looked at first for a record inside them,
# and as many again spread over the rest: a file in another format altogether costs
# twice this many, not all of its lines.
_PROBE_LINES = 64


def judge_unwrapped(text: bytes, fields: Sequence[str], *, first_line: bool) -> Judged:
    """`judge.judge_records` of a bad line; when it is no log record, the records inside
    it if it holds one whole (its own reason stands otherwise: a text log's line is
    still one); rows of no known format are none ("unknown format")."""
    rows, reason, records = judge_records(text, fields, first_line=first_line)
    known = all(known_record(row) for row in rows)
    if reason is None and known:
        return rows, None, records
    # A byte-order mark where `cat` joined a file a Windows tool wrote hides the wrapper.
    line = text.strip().removeprefix(UTF8_BOM)
    inner = behind_prefixes(line) or record_inside(line) or _carried_batch(line)
    if inner is not None:
        inner_rows, inner_reason, inner_records = judge_records(inner, fields)
        if inner_rows and all(known_record(row) for row in inner_rows):
            return inner_rows, inner_reason, inner_records
        if inner_reason == NESTED_TOO_DEEPLY:
            # A record too deep to follow behind a prefix the read takes off: said as
            # such, the run is incomplete. Judged by its prefix ("a text prefix ridtrace
            # does not take off", "missing time"), the record was lost and the run clean.
            return [], inner_reason, inner_records
    if not known:
        return [], reason or "unknown format", records
    return rows, reason, records


def _too_deep_to_unwrap(line: bytes) -> bool:
    """The line's JSON nests deeper than the parser follows (RFC 8259 lets a parser
    limit nesting)."""
    try:
        text = line.decode(json.detect_encoding(line), "surrogatepass")
        TEXT_DECODE.decode(text)
    except RecursionError:
        return brackets_pair_up(text)
    except ValueError:
        return False
    return False


def _carried_batch(line: bytes) -> bytes | None:
    """A line that is one JSON array of a shipper's entries (Grafana's logs downloaded
    as JSON, ``[{"line":"{…}","timestamp":…,"fields":{…}},…]``; a query's rows as
    ``jq -c`` writes them): each entry's line, back to back as the records of one line
    are read; None when no entry carries a record. A text line among them (a banner) is
    an object with no time, so the line is a bad one, its records read all the same."""
    if not line.startswith(b"["):
        return None
    # Each value as its text (`json_value`): a float written back is the text it was.
    batch = json_value(line)
    if not (isinstance(batch, list) and batch and all(isinstance(e, dict) for e in batch)):
        return None
    # Each entry read as a document's entry is (`documents.entry_object`): Grafana's
    # "fields" object is no tracing-subscriber nesting, as `record_inside` took it.
    objects = [_batch_entry(json.dumps(entry, separators=(",", ":")).encode("ascii"), entry,
                            number) for number, entry in enumerate(batch)]
    if not any(carried for _, carried in objects):
        return None
    return b"".join(text for text, _ in objects)


def _batch_entry(text: bytes, entry: dict[str, object], number: int) -> tuple[bytes, bool]:
    """One entry of a one-line batch as `_carried_batch` reads it: a tracing-subscriber
    record flattened (Fluent Bit's http output posts a service's records in arrays),
    else as a document's entry is."""
    read = entry_object(text, number)
    if not read[1] and (has_nesting(entry) or flat_tracing(entry)):
        # Only an entry that carries no line: Grafana's carries one, beside a "fields"
        # object of labels that is no nesting.
        return TracingJsonUnwrapper().unwrap(text, number), True
    return read


def records_inside(
    lines: list[int], fetch: Callable[[Iterable[int]], dict[int, bytes]]
) -> dict[int, bytes]:
    """The records valid JSON lines of no known format carry, by line (`record_inside`):
    the first lines are looked at, then as many spread over the rest, and all of them
    only when one of those held a record. A shipper wraps a service's start-up text too
    (an engine loading its weights can print a few hundred lines), so its first records
    may come long after the first lines: looked at in those alone, none was read."""
    found: dict[int, bytes] = {}

    def look(batch: list[int]) -> None:
        for line, text in fetch(batch).items():
            inner = record_inside(text)
            if inner is not None:
                found[line] = inner

    head, rest = lines[:_PROBE_LINES], lines[_PROBE_LINES:]
    spread = rest[:: max(1, len(rest) // _PROBE_LINES)][:_PROBE_LINES]
    look(head)
    if not found and spread:
        look(spread)
        probed = set(spread)
        rest = [line for line in rest if line not in probed] if found else []
    if found and rest:
        look(rest)
    return found


def record_inside(line: bytes) -> bytes | None:
    """The text a JSON line that is no log record itself carries, when it is a JSON
    object, or None: a Docker json-file entry's ``log``, a ``journalctl -o json`` entry's
    ``MESSAGE``, a shipper's field (Vector, Fluent Bit, logcli), a tracing-subscriber
    line flattened, or a loguru ``serialize=True`` line's record. A part of a record a
    runtime cut is no record: `judge_unwrapped` keeps such a line bad."""
    # A key that can carry a record, looked for before the line is parsed: a log in
    # another format altogether has every line judged, and most hold none.
    if _CARRIER_KEY.search(line) is None:
        return None
    entry = json_object(line)
    if entry is None:
        # Too deep to take apart (a tracing-subscriber line whose fields nest a thousand
        # levels; DuckDB read it as a row with no time): judged as it stood ("missing
        # time"), the record it carried was lost and the run said clean.
        return NESTED_MARK if _too_deep_to_unwrap(line) else None
    if has_nesting(entry) or flat_tracing(entry):
        return TracingJsonUnwrapper().unwrap(line, 0)
    if loguru_record(entry) is not None:
        # A loguru ``serialize=True`` line among a file's other lines: an application's
        # own sink and ridtrace's writing to one stream, or logs `cat` joined.
        return LoguruJsonUnwrapper().unwrap(line, 0)
    if is_record(entry):
        return None
    message = entry.get("MESSAGE")
    if isinstance(message, list) and all(isinstance(b, int) for b in message):
        return bytes(b & 0xFF for b in message)  # journald's MESSAGE that is no text
    parsed = next((record for f in _CARRIERS
                   if (record := envelope_record(entry, f)) is not None), None)
    if parsed is not None:
        return parsed_line(parsed)
    text: str | None = next((entry[f] for f in _CARRIERS if isinstance(entry.get(f), str)), None)
    if text is None:
        return None
    carried = carried_line(text)
    if text.lstrip().startswith("{"):
        return carried
    # The runtime's line as a shipper read it off the node's file, prefix and all
    # (Filebeat's filestream without its container parser, promtail without its cri
    # stage, Vector's file source on /var/log/pods): the record behind the prefix. Only
    # a record: a logger's message of a few words ("sync handler done") read as stern's
    # names before a last word, and the line was judged by that word ("not JSON").
    inner = behind_prefixes(carried.strip())
    return inner if inner is not None and inner.startswith(b"{") else None


# The fields a wrapped line carries its service's line in: Docker's and Fluent Bit's
# "log", journald's "MESSAGE", Vector's "message", logcli's "line".
_CARRIERS = ("log", "MESSAGE", *(f for f in ENVELOPE_FIELDS if f != "log"))
_CARRIER_KEY = re.compile(
    rb'"(?:' + b"|".join(f.encode() for f in (*_CARRIERS, "fields", "span", "spans", "timestamp",
                                              "record"))
    + rb')"\s*:'
)
