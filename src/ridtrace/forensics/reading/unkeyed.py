"""Evidence on a line with no ``span_id``: named, since no request can hold it.

Requests are keyed by span id, so a record logged outside the request's span (a spawned
task's Unlinked error, a WARN written before the span was entered) joins none and was
dropped: the report said clean and complete (exit 0) over the very line it is for. A
file holding one is listed in ``unreadable_files`` with the first such line, by the
span read (`analyze`, the Dask engine) and the events read (`audit`, `trace`, `export
jaeger`) alike, so each command and engine says the same of one input.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ridtrace.contract import FOREIGN_CHUNK, RESPONSE_UNLINKED
from ridtrace.forensics.reading.stats import FileNote

__all__ = ["UNKEYED_KINDS", "unkeyed_events_notes", "unkeyed_notes"]

# The span row's column prefix (``{kind}_rn``), what the line is, what goes missing.
UNKEYED_KINDS = (
    ("unlinked", "an Unlinked error", "the finding is missing"),
    ("foreign", "a foreign chunk", "the finding is missing"),
    ("deprecated", "a deprecated-header WARN", "that use of the header is missing"),
)


def unkeyed_notes(name: str, first_line: Callable[[str], int]) -> list[FileNote]:
    """Notes for file `name`, given the first line of each kind with no span (-1: none)."""
    notes = []
    for kind, what, missing in UNKEYED_KINDS:
        line = first_line(kind)
        if line >= 0:
            notes.append(FileNote(
                name, f"{what} at line {line} names no span_id, so no request holds it: "
                f"{missing} (read that line)"))
    return notes


def unkeyed_events_notes(
    name: str, events: pa.Table, lines_of: Callable[[np.ndarray], np.ndarray],
) -> list[FileNote]:
    """`unkeyed_notes` over normalised events with ``rn``, ``event``, ``deprecated`` and
    ``span_id``; `lines_of` turns row numbers into the file's lines."""
    spanless = events.filter(pc.is_null(events["span_id"]))
    if not len(spanless):
        return []
    event = spanless["event"]
    masks = {
        "unlinked": pc.equal(event, RESPONSE_UNLINKED),
        "foreign": pc.equal(event, FOREIGN_CHUNK),
        "deprecated": pc.is_valid(spanless["deprecated"]),
    }

    def first_line(kind: str) -> int:
        rows = spanless["rn"].filter(pc.fill_null(masks[kind], False)).to_numpy()
        return int(lines_of(np.array([rows.min()]))[0]) if len(rows) else -1

    return unkeyed_notes(name, first_line)
