"""Evidence on a line with no ``span_id``: named, since no request can hold it.

Requests are keyed by span id, so a record logged outside the request's span (a spawned
task's Unlinked error, a WARN written before the span was entered) joins none and was
dropped: the report said clean and complete (exit 0) over the very line it is for. A
file holding one is listed in ``unreadable_files`` with the first such line, by the
span read (`analyze`, the Dask engine) and the events read (`audit`, `trace`, `export
jaeger`) alike, so each command and engine says the same of one input.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ridtrace.contract import FOREIGN_CHUNK, RESPONSE_UNLINKED
from ridtrace.forensics.reading.stats import FileNote

__all__ = [
    "UNKEYED_KINDS", "UnkeyedNote", "in_whole_file", "unkeyed_events_notes", "unkeyed_notes",
]

# The span row's column prefix (``{kind}_rn``), what the line is, what goes missing.
UNKEYED_KINDS = (
    ("unlinked", "an Unlinked error", "the finding is missing"),
    ("foreign", "a foreign chunk", "the finding is missing"),
    ("deprecated", "a deprecated-header WARN", "that use of the header is missing"),
)


@dataclass(frozen=True)
class UnkeyedNote(FileNote):
    """A `FileNote` that keeps its kind and line, so a Dask block's can be made the
    file's (`in_whole_file`)."""

    kind: str = ""
    line: int = 0


def _note(name: str, kind: str, line: int) -> UnkeyedNote:
    what, missing = next((w, m) for k, w, m in UNKEYED_KINDS if k == kind)
    reason = (f"{what} at line {line} names no span_id, so no request holds it: "
              f"{missing} (read that line)")
    return UnkeyedNote(name, reason, kind=kind, line=line)


def unkeyed_notes(name: str, first_line: Callable[[str], int]) -> list[FileNote]:
    """Notes for file `name`, given the first line of each kind with no span (-1: none)."""
    return [_note(name, kind, line) for kind, _, _ in UNKEYED_KINDS
            if (line := first_line(kind)) >= 0]


def in_whole_file(
    notes: Sequence[FileNote], offset: int, earlier: Sequence[FileNote],
) -> list[FileNote]:
    """A Dask block's notes as the file's: its lines moved by the `offset` lines before
    the block, and none of a kind an `earlier` block of the file already named (the
    pandas engine names each kind's first line only)."""
    named = {(n.file, n.kind) for n in earlier if isinstance(n, UnkeyedNote)}
    return [
        _note(n.file, n.kind, n.line + offset) if isinstance(n, UnkeyedNote) else n
        for n in notes
        if not (isinstance(n, UnkeyedNote) and (n.file, n.kind) in named)
    ]


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
