"""Logs downloaded from Grafana's Explore as text: a line per item of the query's meta
(``Common labels: {"app":"frontend"}``, ``Line limit: "1000 (1000 displayed)"``), two
blank lines, then a row a line, the time twice and the line, tab-separated::

    1790949900003	2026-10-02T14:05:00.003Z	{"time":"2026-10-02T14:05:00.003195Z",…}

Read as JSON lines every line was a bad one, and the download of a real incident an
incomplete read with no finding. Each row is read as its line, cited at it; the meta
lines are empty lines (not counted), but for a line limit the query reached
(``Line limit: "1000 (1000 returned)"``): the download is a page of the lines the query
matched, that line a bad one, "one page of the query's answer", and the read incomplete.
Its JSON download is an array on one line (`rescue`), its CSV one of `csv_export`'s.
"""

from __future__ import annotations

import json
import re

from ridtrace.forensics.reading.judge import page_line
from ridtrace.forensics.reading.unwrap_parts import LineByLine

__all__ = ["GrafanaTextUnwrapper", "grafana_text_of"]

# A row: the time in epoch milliseconds, then as ISO 8601 in UTC (JavaScript's
# toISOString), each followed by a tab.
_ROW = re.compile(rb"\d{10,}\t\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z\t")
# The query's line limit and the lines it returned ("displayed" in older releases): as
# many lines as the limit are a page of what the query matched.
_LINE_LIMIT = re.compile(rb'Line limit: "(\d+) \((\d+) (?:returned|displayed)\)"\r?')
# A meta item: its label, then its value as JSON; without a label, a JSON string.
_META = re.compile(rb'(?:[A-Z][^\t\r\n:]*: (?P<value>["{\[0-9].*?)|(?P<text>".*?))\r?$')


def _meta(line: bytes) -> bool:
    found = _META.fullmatch(line)
    if found is None:
        return False
    try:
        json.loads(found["value"] or found["text"])
    except (ValueError, RecursionError):
        return False
    return True


class GrafanaTextUnwrapper(LineByLine):
    """Grafana Explore's logs downloaded as text: each row's line; meta lines empty."""

    name = "Grafana logs download"

    def unwrap(self, line: bytes, number: int) -> bytes:
        row = _ROW.match(line)
        if row is not None:
            return line[row.end():]
        limit = _LINE_LIMIT.fullmatch(line)
        if limit is not None and int(limit[2]) >= int(limit[1]):
            # A bad line that says so (`judge.PAGE_MARK`): the read is incomplete.
            returned = int(limit[2])
            return page_line(returned, returned, at_least=True,
                             what="lines (Grafana's line limit)")
        # No row is a meta line: every row opens with its two times.
        return b"" if _meta(line) else line


def grafana_text_of(lines: list[bytes]) -> GrafanaTextUnwrapper | None:
    """The unwrapper for first lines (stripped, blank ones left out) that are Grafana's
    download: meta lines, if any, then rows, one of the first of them a JSON line."""
    rows = False
    for line in lines:
        row = _ROW.match(line)
        if row is None:
            # Meta lines come before the rows; a log's own first line ends the look at
            # once (every file a walk finds is asked).
            if rows or not _meta(line):
                return None
            continue
        rows = True
        if line[row.end():][:1] == b"{":
            return GrafanaTextUnwrapper()
    return None
