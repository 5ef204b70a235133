"""Per-span records of a read: what `ridtrace analyze` reads, one part per file.

The same stages as the events read (`ridtrace.forensics.reading.events`), ending in
DuckDB's per-span aggregation instead of exported lines: the rules need one row per
request, not the lines behind it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ridtrace.forensics.reading.inputs import Source
from ridtrace.forensics.reading.parallel import Batched, read_all
from ridtrace.forensics.reading.scan import Instant, to_window
from ridtrace.forensics.reading.stats import ReadStats
from ridtrace.forensics.reading.table import LogTable
from ridtrace.forensics.records.pieces import SpanPiece

if TYPE_CHECKING:
    import pandas as pd

Progress = Callable[[int], None]


def partial_of(table: LogTable, file_id: int, part: int) -> pd.DataFrame:
    """A parsed file's (or block's) per-span rows as a partial frame of part `part`."""
    return pieces_partial([span_piece(table, file_id, part)])


def span_piece(table: LogTable, file_id: int, part: int | None = None) -> SpanPiece:
    """A file's per-span rows, its part numbered as its file unless it is a block."""
    spans, lines = table.spans()
    return SpanPiece(spans, lines, file_id, file_id if part is None else part)


def pieces_partial(pieces: list[SpanPiece], *, shuffled: bool = True) -> pd.DataFrame:
    # Imported on first use: the read path imports no pandas (the rules import it beside).
    from ridtrace.forensics.records.partials import pieces_frame

    return pieces_frame(pieces, shuffled=shuffled)


@dataclass
class LoadedRequests:
    """Per-span partials of a read (one part per file; a frame per file, or per batch of
    small files), with its counters."""

    partials: list[pd.DataFrame]
    stats: ReadStats
    files: list[str]
    window_lines: int | None = None


def read_partials(
    sources: Sequence[Source],
    *,
    on_bytes: Progress | None = None,
    since: Instant | None = None,
    until: Instant | None = None,
) -> LoadedRequests:
    """What `analyze` reads: per-span rows of every source's evidence lines.

    Each file's spans stay Arrow until the read is over; then they become partial
    frames, one per file (per batch of small files). Made while the other reading
    thread's aggregate was at its largest, pandas' copies of a finished file's spans
    added ~30 MiB to the read's peak, which is `analyze`'s (docs/performance.md).
    """
    read = read_all(sources, lambda table, file_id: [span_piece(table, file_id)],
                    lean=True, window=to_window(since, until), on_bytes=on_bytes,
                    batched=Batched(span_piece, _as_read))
    partials = []
    read.results.reverse()
    while read.results:  # each file's Arrow spans released once its frame is made
        partials.append(pieces_partial(read.results.pop(), shuffled=False))
    return LoadedRequests(partials, read.stats, [src.name for src in sources],
                          window_lines=read.window_lines)


def _as_read(pieces: list[SpanPiece]) -> list[SpanPiece]:
    """A batch of small files' pieces, kept as they are until the read is over; but for
    one, those of files that gave no span (empty logs, logs of blank lines) are let go.

    Each piece's table is a slice of its batch's, sharing its data, but with Arrow
    objects of its own for every column: about 27 KB a file, 4 GB for a folder of
    100,000 empty logs. One is kept for the frame's columns when none has a span.
    """
    kept = [piece for piece in pieces if piece.spans.num_rows]
    return kept or pieces[:1]
