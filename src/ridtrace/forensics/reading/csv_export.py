"""Log lines exported as CSV: Kibana's Discover "Generate CSV" report, Splunk's export
as CSV (or a CSV a log search UI downloads), a header row naming the columns and a row
per document, the service's line in its ``message`` column (quoted, its quotes doubled),
Splunk's ``_raw``, or, with no column chosen, the whole document as JSON in ``_source``::

    "@timestamp",message
    "Oct 2, 2026 @ 14:00:00.003","{""time"":""2026-10-02T14:00:00.003195Z"",…}"

Read as JSON lines every row was a bad one ("not JSON"), no request read, and a real
incident an incomplete read (exit 3). Each row is read here as that column's line,
cited at the row's line; the header row is an empty line (not counted).
"""

from __future__ import annotations

import copy
import csv

from ridtrace.forensics.reading.documents import entry_line
from ridtrace.forensics.reading.shippers import is_record
from ridtrace.forensics.reading.unwrap_parts import LineByLine, carried_line, json_object

__all__ = ["CsvExport", "csv_export_of"]

# The column that holds the line, best first: the whole document (Kibana with no
# column chosen), the event as indexed (Splunk's export as CSV: ``"_time","_raw",…``),
# then the line a shipper kept (Filebeat's and Vector's ``message``, Fluent Bit's
# ``log``, Loki's ``line``, CloudWatch Logs Insights' ``@message``, Azure Monitor's
# ``LogMessage`` or ``LogEntry``), whatever the case of its name ("Message" in a UI's
# export).
# Kibana escapes a value that opens like a spreadsheet formula (``@timestamp``) with a
# quote before it.
_LINE_COLUMNS = ("_source", "_raw", "message", "log", "line", "@message", "logmessage",
                 "logentry")


def _row(line: bytes) -> list[str] | None:
    try:
        return next(csv.reader([line.decode("utf-8", "surrogateescape")]))
    except (csv.Error, StopIteration):
        return None


class CsvExport(LineByLine):
    """A CSV export of log documents: each row's line, from one column."""

    name = "CSV export"

    def __init__(self, header: bytes, column: int, width: int) -> None:
        super().__init__()
        self._header, self._column, self._width = header, column, width

    def unwrap(self, line: bytes, number: int) -> bytes:
        if line.strip() == self._header:
            # The header row, known by its text, not by being first: a follow from the
            # end feeds the rows written since.
            return b""
        row = _row(line)
        if row is None or len(row) != self._width:
            return line  # judged as the line it is
        text = carried_line(row[self._column])
        return entry_line(text, number) if text.startswith(b"{") else text


def csv_export_of(head: bytes) -> CsvExport | None:
    """The unwrapper for `head` when it is a CSV export whose rows carry ridtrace or
    Dynamo records (one at least among the first lines), else None."""
    first, _, _ = head.partition(b"\n")
    if b"," not in first or first.lstrip().startswith((b"{", b"[")):
        return None
    header = _row(first.strip())
    if header is None:
        return None
    names = [name.strip().lstrip("'").lower() for name in header]
    column = next((names.index(c) for c in _LINE_COLUMNS if c in names), None)
    if column is None:
        return None
    probe = CsvExport(first.strip(), column, len(names))
    for line in copy.deepcopy(probe).feed(head[: head.rfind(b"\n") + 1]).split(b"\n"):
        value = json_object(line) if line.startswith(b"{") else None
        if value is not None and is_record(value):
            return probe
    return None
