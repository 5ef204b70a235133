"""Log entries fetched as one indented JSON document: ``gcloud logging read --format=json``
(an array of Cloud Logging LogEntry objects), an Elasticsearch or OpenSearch ``_search``
response (``?pretty``, Kibana's Dev Tools: the entries in ``hits.hits``), a Loki query
answer indented by ``jq .`` (``[time, line]`` entries in each stream's ``values``), or
any array of records a JSON printer indented (``jq -s .``).

Those are the shapes a user gets when the logs live in Cloud Logging or Elasticsearch,
and each entry is spread over many lines::

    [
      {
        "insertId": "…",
        "jsonPayload": {
          "schema": "ridtrace/1",
          …
        },
        "timestamp": "2026-10-02T14:00:00.003195123Z"
      },
      …

Read as JSON lines every line of it was a bad one, and a run on a clean incident and on
a real one alike ended in "incomplete" (exit 3) with no finding. Each entry here is put
together from its lines and read as the line its shipper's envelope carries (the
entry's ``jsonPayload`` or ``textPayload``, a hit's ``_source``: see
`reading.shippers`), cited at the entry's last line; every other line of the document is
an empty line (empty lines are not rows), so the lines counted are the entries.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ridtrace.forensics.reading.judge import page_line
from ridtrace.forensics.reading.lines import MAX_LINE_BYTES
from ridtrace.forensics.reading.shippers import (
    ENVELOPE_FIELDS,
    application_line,
    envelope_of,
    inner_document,
    is_record,
    parsed_line,
)
from ridtrace.forensics.reading.unwrap_parts import (
    LineByLine,
    batched_record,
    carried_line,
    json_object,
)

__all__ = ["DocumentEntries", "document_entries_of", "entry_line", "entry_object"]

# A JSON string, escapes and all: its brackets are text, not structure.
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
# The array an Elasticsearch ``_search`` response holds its hits in: ``"hits" : [``
# (Jackson's ``?pretty`` puts a space before the colon, Kibana's console does not); a
# Loki query answer (``curl …/query_range | jq .``) holds each stream's lines in
# ``"values": [``, each a ``[time, line]`` array.
_ENTRY_ARRAY = re.compile(rb'"(?:hits|values)"\s*:\s*\[$')
_SEARCH_HEAD = re.compile(rb'\{\s*"(?:took|_scroll_id|timed_out|hits|status)"\s*:')
# A `_search` response's top-level object (`"hits" : {`), and in it how many hits the
# query matched: `"total" : N` (Elasticsearch 6), `"total" : { "value" : N, …}` (7 on).
_SECTION = re.compile(rb'"([^"]*)"\s*:\s*\{$')
_HITS_TOTAL = re.compile(rb'"(?:total|value)"\s*:\s*(\d+),?$')
# `"relation" : "gte"`: the total is a lower bound (track_total_hits stops counting at
# 10,000), so a response of that many hits, the most one `size` gets, may hold a part.
_AT_LEAST = re.compile(rb'"relation"\s*:\s*"gte"')


class DocumentEntries(LineByLine):
    """An indented JSON document of log entries: each entry's line at its last line."""

    name = "JSON document of log entries"

    def __init__(self, opening: bytes | None = None) -> None:
        super().__init__()
        # The line an entry opens with, its indentation and all ("  {" in gcloud's
        # output): known from the head, it finds the entries of a document fed from
        # anywhere (a follow from the end), where the depth counted from the top cannot.
        self.opening = opening
        self._depth = 0
        self._entry_depths: set[int] = set()  # depths right inside an array of entries
        self._entry: list[bytes] = []
        self._entry_size = 0
        self._entry_from = 0  # the line the entry being read started at; 0 for none
        self._inside = 0  # how deep the entry being read is open
        # The top-level object a line is in, the hits a `_search` response says its query
        # matched, and the entries read: a response of 10 hits (Elasticsearch's default
        # size) of thousands was read as the whole log, "No findings" on the rest.
        self._section = b""
        self._total: int | None = None
        self._at_least = False  # a total counted only so far (10,000 unless asked)
        self._entries = 0

    def unwrap(self, line: bytes, number: int) -> bytes:
        stripped = line.strip()
        bare = _STRING.sub(b'""', stripped)
        change = bare.count(b"{") + bare.count(b"[") - bare.count(b"}") - bare.count(b"]")
        before = self._depth
        self._depth += change
        if self._entry_from:
            self._inside += change
            return self._go_on(stripped, number)
        if before == 1 and (section := _SECTION.match(stripped)) is not None:
            self._section = section[1]
        if self._section == b"hits" and before in (2, 3):
            total = _HITS_TOTAL.match(stripped)
            if total is not None:
                self._total = int(total[1])
            elif _AT_LEAST.match(stripped) is not None:
                self._at_least = True
            elif (bare.startswith(b"]") and self._depth == 2 and self._total is not None
                  and (self._entries < self._total or self._at_least)):
                return page_line(self._entries, self._total, at_least=self._at_least)
        if self.opening is None:  # learnt from the document's structure
            if (before == 0 and bare == b"[") or _ENTRY_ARRAY.search(stripped):
                self._entry_depths.add(self._depth)
                return b""
            if not (bare in (b"{", b"[") and before in self._entry_depths):
                return b""
            self.opening = line.rstrip(b"\r")
        elif line.rstrip(b"\r") != self.opening:
            return b""
        self._entry_from, self._entry, self._entry_size = number, [], 0
        self._inside = change
        return self._go_on(stripped, number)

    def _go_on(self, stripped: bytes, number: int) -> bytes:
        # Kept to one byte past the longest line the read takes, as a record in parts is.
        room = MAX_LINE_BYTES + 1 - self._entry_size
        if room > 0:
            self._entry.append(stripped[:room])
            self._entry_size += min(len(stripped), room) + 1
        if self._inside > 0:
            return b""
        self._entry_from = 0
        self._entries += 1
        return entry_line(b" ".join(self._entry).removesuffix(b","), number)

    def unfinished(self) -> list[int]:
        return [self._entry_from] if self._entry_from else []


def entry_line(entry: bytes, number: int) -> bytes:
    """The line one entry of the document stands for: the record its envelope carries,
    the record itself, or (neither) the entry as it is, to be judged as such."""
    if entry.startswith(b"["):  # a Loki value: [time, line] (and metadata since Loki 3)
        pair = _json_array(entry)
        if not (len(pair) > 1 and isinstance(pair[1], str)):
            return entry
        entry = carried_line(pair[1])
    value = json_object(entry)
    if value is None or is_record(value):
        return entry
    envelope = envelope_of([entry])
    if envelope is not None:
        return envelope.unwrap(entry, number)
    # An application's line beside ridtrace's in the same index or log (structlog's,
    # python-json-logger's): no envelope is known from it alone.
    own = application_line(value)
    if own is not None:
        return parsed_line(own)
    # A service's text line (a start-up banner) is judged as the text it is: "not JSON",
    # not "missing time" for the entry around it.
    document = inner_document(value)
    fields = value if document is None else document
    text = next((v for f in ENVELOPE_FIELDS if isinstance(v := fields.get(f), str)), None)
    return entry if text is None else carried_line(text)


def entry_object(entry: bytes, number: int) -> tuple[bytes, bool]:
    """One entry of several read back to back on one line (a one-line answer or array),
    as JSON objects, and whether it carried a line: the entry itself when it carries
    none, else its line as a batch's record (`unwrap_parts.batched_record`): the records
    it carries, or one naming why it cannot be read (a banner, a record cut short), so
    that the line is a bad one and says so. A torn record taken as it was, back to back
    with the others, made the whole line unreadable and every record on it lost."""
    line = entry_line(entry, number)
    if line == entry:
        return entry, False
    return batched_record(line.decode("utf-8", "surrogatepass")), True


def _json_array(text: bytes) -> list[Any]:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return []
    return value if isinstance(value, list) else []


def document_entries_of(head: bytes) -> DocumentEntries | None:
    """The unwrapper for `head` when it opens an indented JSON document of log entries
    (one at least among its first 64 KiB carrying a ridtrace or Dynamo record); None
    otherwise, so an array or report of anything else stays the document it is."""
    start = head.lstrip()
    if not (start.startswith(b"[") or _SEARCH_HEAD.match(start)):
        return None
    probe = DocumentEntries()
    for line in probe.feed(head[: head.rfind(b"\n") + 1]).split(b"\n"):
        value = json_object(line) if line.startswith(b"{") else None
        if value is not None and is_record(value):
            return DocumentEntries(probe.opening)
    return None
