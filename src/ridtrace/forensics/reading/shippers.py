"""Log shippers that write each line as a JSON object of their own, or frame it in their
file output: Vector, Fluent Bit, Loki's logcli, Cloud Logging's exported LogEntry, Filebeat
(also as Elasticsearch hits), Splunk's export;
Fluent Bit's and Fluentd's ``out_file``. `reading.unwrap` recognises them among the
other wrappers; `reading.rescue` takes them off lines a plain file holds.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ridtrace.forensics.reading.line_prefixes import cri_part
from ridtrace.forensics.reading.other_loggers import an_application_line
from ridtrace.forensics.reading.unwrap_parts import LineByLine, carried_line, json_object

__all__ = [
    "ENVELOPE_FIELDS", "HIT_SOURCE", "SPLUNK_RESULT", "EnvelopeUnwrapper", "ShipperFileUnwrapper",
    "envelope_of", "envelope_record", "inner_document", "is_record", "parsed_line",
    "shipper_file_frames",
]


# The field a log shipper that writes each line as a JSON object of its own carries the
# service's line in: Vector's ``message``, Fluent Bit's ``log`` (its ``date`` first, no
# ``stream``: not Docker's shape), Loki's ``logcli --output=jsonl`` ``line``, Cloud
# Logging's ``jsonPayload`` (a LogEntry as a sink exports it) or ``textPayload`` (where
# the agent kept the line as text: the Ops Agent's files receiver without a parse_json
# processor), and Filebeat's ``json`` (its log input's ``json.*`` decoding puts the record
# there unless ``keys_under_root``; without decoding the line is in ``message``),
# Splunk's ``_raw`` (the event as it was indexed), CloudWatch Logs Insights'
# ``@message`` (its console's results downloaded as JSON or CSV) and Azure Monitor's
# container logs (AKS), ``LogMessage`` (ContainerLogV2) or ``LogEntry`` (ContainerLog),
# as a Log Analytics query's results come (``az monitor log-analytics query``).
ENVELOPE_FIELDS = (
    "log", "message", "line", "jsonPayload", "textPayload", "json", "_raw", "@message",
    "LogMessage", "LogEntry",
)
# Cloud Logging's agent (GKE's) parses a JSON line into the entry's jsonPayload and moves
# its "time" to the entry's "timestamp": the line's own time, to the nanosecond.
_TIME_MOVED_TO = {"jsonPayload": "timestamp"}


def envelope_record(entry: dict[str, object], field: str) -> dict[str, object] | None:
    """The record a shipper parsed into `field` of `entry`, its time put back where the
    shipper moved it; None when `field` holds no record."""
    value = entry.get(field)
    if not (isinstance(value, dict) and is_record(value)):
        return None
    return _time_put_back(entry, field, value)


def _time_put_back(entry: dict[str, object], field: str,
                   value: dict[str, object]) -> dict[str, object]:
    moved = entry.get(_TIME_MOVED_TO.get(field, ""))
    if "time" not in value and isinstance(moved, str):
        return {"time": moved, **value}
    return value


# A container runtime cuts a line longer than its buffer (containerd: 16 KiB) into parts,
# CRI's tags ``P`` then a last ``F``. A shipper whose CRI parser does not put them together
# again ships each part as an entry of its own, the tag in ``logtag`` (Fluent Bit's stock
# regex ``cri`` parser, Fluentd's ``cri`` parser without the concat filter) or ``_p``
# (Fluent Bit's multiline ``cri`` parser, on a flush): read one by one, each part was a bad
# line, and a long Unlinked error went missing under the 1 % of bad lines a read may have.
_PART_TAGS = ("_p", "logtag")
# An entry's fields that differ between the parts of one line; the others (stream,
# Kubernetes metadata, file) tell which container's line a part is of.
_PER_PART = frozenset({*_PART_TAGS, "time", "date", "timestamp", "@timestamp"})


class ShippedLines(LineByLine):
    """A shipper's entries a line, each carrying a service's line in one of its fields."""

    def carried(self, entry: dict[str, Any], field: str, text: str, number: int, *,
                container: str = "") -> bytes:
        """The line `entry` carries as `text` in `field`: whole, or, when the runtime cut
        it into parts the shipper did not put together again, at its last part's line
        (an empty line at each earlier part's). `container`: what names the container
        besides the entry's own fields (a file output's tag)."""
        line = carried_line(text)
        tag = next((entry[k] for k in _PART_TAGS if k in entry), None)
        stream = b""
        if tag is None:
            # A node's CRI line shipped as the runtime wrote it (Vector's `file` source,
            # a collector's filelog receiver without its CRI parsing): a long record's
            # parts were each a bad line ("missing time"), and the read said complete.
            cri = cri_part(line)
            if cri is not None:
                last, stream, line = cri
                tag = "F" if last else "P"
        if tag not in ("P", "F") or (tag == "F" and not self._parts.pending):
            return line
        fields = {k: v for k, v in entry.items() if k != field and k not in _PER_PART}
        source = (container, stream, json.dumps(fields, sort_keys=True))
        return self._parts.add(source, number, line, tag == "F")


class EnvelopeUnwrapper(ShippedLines):
    """A shipper's JSON object per line holding the service's line in one field."""

    name = "log shipper JSON"

    def __init__(self, field: str = "message") -> None:
        super().__init__()
        self.field = field

    def unwrap(self, line: bytes, number: int) -> bytes:
        entry = json_object(line)
        if entry is None or is_record(entry):
            return line
        document = inner_document(entry)
        if document is not None:
            if (is_record(document) and not _raw_event(document)) or an_application_line(
                    document):
                return parsed_line(document)
            entry = document
        record = envelope_record(entry, self.field)
        if record is not None:
            return parsed_line(record)
        value = entry.get(self.field)
        if isinstance(value, dict):
            # Another logger's line parsed alike (structlog's, python-json-logger's,
            # loguru's `serialize=True`, next to ridtrace's on GKE): read as it was
            # written, not as the envelope, which was a bad line ("missing time") each.
            return parsed_line(_time_put_back(entry, self.field, value))
        if not isinstance(value, str):
            return line
        return self.carried(entry, self.field, value, number)


def parsed_line(record: dict[str, object]) -> bytes:
    """A record a shipper parsed into an object of its own (Vector's ``.message =
    parse_json!(.message)``) as a JSON line again. ASCII escapes keep a lone surrogate
    valid JSON, and every value is read as text: a number parsed as text (`json_object`)
    is that text quoted."""
    return json.dumps(record, separators=(",", ":")).encode("ascii")


# Fluent Bit's file output in its default format (``out_file``): the tag, then the time
# and the record as a JSON array: ``kube.var.log.containers.x.log: [1790949900.1, {…}]``.
_FLUENT_BIT_FILE = re.compile(rb"(?P<tag>[^\s:\[{]+): \[\d+(?:\.\d+)?, (?P<record>\{.*\})\]\s*$")
# Fluentd's file output in its default format (``out_file``): the time (ISO 8601, or
# epoch seconds with ``time_type float``), the tag and the record, tab-separated.
_FLUENTD_FILE = re.compile(
    rb"(?:\d{4}-\d{2}-\d{2}[T ][^\t]*|\d+(?:\.\d+)?)\t(?P<tag>[^\t\s]+)\t(?P<record>\{.*\})\s*$"
)


class ShipperFileUnwrapper(ShippedLines):
    """A shipper's file output, each record framed by the shipper's own fields (Fluent
    Bit's and Fluentd's ``out_file``): the record itself when an input parser made it
    the service's record, else the line in its ``log`` field (the tail input's, as
    Docker's or CRI's parser leaves it) or ``message``."""

    def __init__(self, name: str, frame: re.Pattern[bytes]) -> None:
        super().__init__()
        self.name, self._frame = name, frame

    def unwrap(self, line: bytes, number: int) -> bytes:
        framed = self._frame.match(line)
        if framed is None:
            return line
        record: bytes = framed["record"]
        entry = json_object(record)
        if entry is None or is_record(entry):
            return record
        for field in ("log", "message"):
            text = entry.get(field)
            if isinstance(text, str):
                # The tag names the container file the entry was read from.
                tag = framed["tag"].decode("utf-8", "replace")
                return self.carried(entry, field, text, number, container=tag)
        return record


# An Elasticsearch or OpenSearch hit (elasticdump's output, a ``_search`` saved a hit a
# line) holds the document a shipper indexed in ``_source``: Filebeat's, its line in
# ``message``, or the record itself where its JSON was decoded under the root.
HIT_SOURCE = "_source"
# Splunk's export (Splunk Web's "Export Results" as JSON, the REST API's
# ``search/jobs/export?output_mode=json``) writes a result a line,
# ``{"preview":false,"offset":0,"result":{"_raw":"…","_time":"…",…}}``, newest first.
SPLUNK_RESULT = "result"
_DOCUMENT_KEYS = (HIT_SOURCE, SPLUNK_RESULT)


def _raw_event(document: dict[str, Any]) -> bool:
    # Splunk's fields extracted from a JSON event sit beside the event itself: the event
    # as it was written is read, not the fields as Splunk named and typed them.
    return isinstance(document.get("_raw"), str)


def inner_document(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The document an entry holds under a key of its own (a hit's ``_source``,
    Splunk's ``result``), or None."""
    for key in _DOCUMENT_KEYS:
        document = entry.get(key)
        if isinstance(document, dict):
            return document
    return None


def is_record(entry: dict[str, object]) -> bool:
    """A ridtrace or Dynamo record itself (whatever other keys it has), not a wrapper."""
    return "schema" in entry or "target" in entry


def application_line(entry: dict[str, Any]) -> dict[str, Any] | None:
    """An application's own line (`other_loggers.an_application_line`) that `entry`
    carries parsed, as a hit's ``_source`` or in a field (Cloud Logging's
    ``jsonPayload``), its time put back where the shipper moved it; None otherwise."""
    document = inner_document(entry)
    if document is not None:
        return document if an_application_line(document) else None
    for field in ENVELOPE_FIELDS:
        value = entry.get(field)
        if isinstance(value, dict):
            value = _time_put_back(entry, field, value)
            return value if an_application_line(value) else None
    return None


def envelope_of(lines: list[bytes]) -> EnvelopeUnwrapper | None:
    """The shipper envelope the first lines are in, known by a JSON record in one of its
    fields (a banner's text in the first ones is passed over); None at the first line
    that is a record itself, as a plain log's first line is."""
    for line in lines:
        entry = json_object(line) if line.startswith(b"{") else None
        if entry is None:
            continue
        if is_record(entry):
            return None
        document = inner_document(entry)
        if document is not None:
            if is_record(document) and not _raw_event(document):
                return EnvelopeUnwrapper()
            entry = document
        for field in ENVELOPE_FIELDS:
            value = entry.get(field)
            if (isinstance(value, str) and _opens_a_record(value)) or (
                isinstance(value, dict) and is_record(value)
            ):
                return EnvelopeUnwrapper(field)
    return None


def _opens_a_record(text: str) -> bool:
    """Whether a shipped line opens a JSON record, or a node's CRI line does (shipped as
    the runtime wrote it: the envelope was not seen, and the parts of a long record
    were never put together)."""
    text = text.lstrip()
    if text.startswith("{"):
        return True
    cri = cri_part(text.encode("utf-8", "surrogatepass"))
    return cri is not None and cri[2].lstrip().startswith(b"{")


def shipper_file_frames() -> tuple[tuple[str, re.Pattern[bytes]], ...]:
    """The shippers' file outputs by name, with the frame their lines are in."""
    return (("Fluent Bit file", _FLUENT_BIT_FILE), ("Fluentd file", _FLUENTD_FILE))
