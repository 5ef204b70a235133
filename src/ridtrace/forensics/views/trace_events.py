"""The log lines of the blocks `ridtrace trace` shows, on the corrected clock, and what
they say about each caller's answer (its duration ends with it; none logged is a verdict).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ridtrace.contract import (
    DEPRECATED_HEADER,
    DURATION_MS,
    FOREIGN_CHUNK,
    REQUEST_END,
    RESPONSE_UNLINKED,
    SPAN_CLOSED,
)
from ridtrace.forensics.views.trace_rows import EventRow, RequestBlock
from ridtrace.forensics.views.trace_starts import ANSWERS, shifted_times
from ridtrace.forensics.views.verdicts import NO_ANSWER, NO_FINGERPRINTS, NO_OUTPUT, Verdict, text


def ms_since(t: Any, t0: pd.Timestamp) -> float:
    """Milliseconds from `t0` to `t`, to the microsecond."""
    return round(float((pd.Timestamp(t) - t0).total_seconds()) * 1000.0, 3)


# More than this between where a caller's answer line says it ended (its stated
# `duration_ms`) and the line itself: the line was written after work that followed
# the answer (an app's background tasks), not by the answer's own end.
_LOGGED_AFTER_MS = 1.0


def answered_ms(line_ms: float, stated: Any) -> float:
    """Where a caller's answer ended, in ms since its start: at its answer line, or at
    the duration that line states when the line came well after it. The middleware
    writes `request.end` once the app returns, after the background tasks its response
    ran, whose time `duration_ms` leaves out: a 5 ms answer with a 1 s task read 1 s."""
    try:
        duration = float(stated)
    except (TypeError, ValueError):
        return line_ms
    if 0 <= duration < line_ms - _LOGGED_AFTER_MS:
        return round(duration, 3)
    return line_ms


def line_detail(row: Any) -> str | None:
    """What a line says beyond its event: a dispatch line's worker and reason, the header
    a deprecated-header line names, and the error a line logged (why a request, its
    worker or an attempt failed: a 504 read only "error" where its line said "worker …
    sent nothing for 1.5s")."""
    event = text(row.event)
    header = text(row.deprecated) if event == DEPRECATED_HEADER else None
    error = text(row.error)
    parts = [text(row.dispatch), header and f"header {header}", _foreign(row, event),
             f"error: {error}" if error else _unlinked_message(row, event)]
    return ", ".join(part for part in parts if part) or None


def _unlinked_message(row: Any, event: str | None) -> str | None:
    """An Unlinked line's own message ("Unlinked request; initiating request task was
    dropped …" or "Unlinked response; …"), which tells a displaced caller from a reply
    nobody took: shown as the bare event twice, the difference was the incident's."""
    if event != RESPONSE_UNLINKED:
        return None
    message = text(getattr(row, "message", None))
    return message if message and message != event else None


def _foreign(row: Any, event: str | None) -> str | None:
    """A refused foreign chunk's request and the worker that sent it: `analyze` names
    them in its finding, and the one view of the request showed the bare event."""
    if event != FOREIGN_CHUNK:
        return None
    chunk, worker = text(row.chunk_request_id), text(row.worker)
    parts = [chunk and f"chunk for request {chunk}", worker and f"from worker {worker}"]
    return " ".join(part for part in parts if part) or None


# Most lines of one request listed beside its lifecycle lines, which are always listed:
# the first half and the last half of the others. A request logging a line per token of
# a long generation (a million DEBUG lines) took `trace` over a minute and 2.3 GB.
MAX_LINES = 1000


def _within(rows: pd.DataFrame, wanted: dict[str, RequestBlock],
            max_lines: int | None) -> pd.DataFrame:
    """`rows` (in time order) less each block's lines past `max_lines` that are no
    lifecycle line (the middle ones), counted on the block with where they were."""
    if not max_lines or len(rows) <= max_lines:
        return rows
    owner = rows["span_id"].astype(str).map(
        {span: id(block) for span, block in wanted.items()}).to_numpy()
    other = ~rows["evidence"].to_numpy(dtype=bool) if "evidence" in rows else np.ones(
        len(rows), dtype=bool)
    rank = pd.Series(np.where(other, 1, 0)).groupby(owner).cumsum().to_numpy()
    total = pd.Series(other.astype(np.int64)).groupby(owner).transform("sum").to_numpy()
    half = max_lines // 2
    cut = other & (total > max_lines) & (rank > half) & (rank <= total - (max_lines - half))
    if not cut.any():
        return rows
    blocks = {id(block): block for block in wanted.values()}
    kept_before = pd.Series(~cut).groupby(owner).cumsum().to_numpy()
    marked: set[int] = set()
    for at in np.flatnonzero(cut):  # where each block's first cut line was
        if int(owner[at]) not in marked:
            marked.add(int(owner[at]))
            blocks[int(owner[at])].omitted_at = int(kept_before[at])
    cut_owners, counts = np.unique(owner[cut], return_counts=True)
    for key, count in zip(cut_owners.tolist(), counts.tolist(), strict=True):
        blocks[key].events_omitted = count
    return rows[~cut]


def attach_events(
    blocks: list[RequestBlock], events: pd.DataFrame, offsets: dict[str, int], *,
    max_lines: int | None = MAX_LINES,
) -> None:
    """Fill each shown block's events: its spans' lines on the corrected clock, in time
    order; past `max_lines` of a block's lines that are no lifecycle line, its middle
    ones are counted (`RequestBlock.events_omitted`), not listed."""
    wanted = {bar.span_id: block for block in blocks for bar in block.spans}
    label = {bar.span_id: bar.side for block in blocks for bar in block.spans}
    rows = events[events["span_id"].isin(list(wanted)).to_numpy()]
    rows = rows.assign(shifted_time=shifted_times(rows, offsets))
    rows = rows.sort_values(["shifted_time", "file", "line"], kind="stable")
    rows = _within(rows, wanted, max_lines)
    answered: dict[int, tuple[RequestBlock, float]] = {}
    closed: dict[int, tuple[RequestBlock, float]] = {}
    for r in rows.itertuples(index=False):
        block = wanted[str(r.span_id)]
        event = EventRow(
            ms=ms_since(r.shifted_time, block.start),
            side=label[str(r.span_id)],
            span_id=str(r.span_id),
            event=text(r.event) or text(r.message) or "",
            outcome=text(r.outcome),
            level=text(r.level),
            file=str(r.file),
            line=int(r.line),  # type: ignore[arg-type]
            detail=line_detail(r),
        )
        block.events.append(event)
        if event.span_id == block.span_id and event.event in (*ANSWERS, SPAN_CLOSED):
            # Cut to the duration a request.end states (written after the background
            # tasks its response ran); Dynamo's latency_ms is whole ms, rounded down,
            # and its line is where it answered.
            ms = answered_ms(event.ms, getattr(r, DURATION_MS) if event.event == REQUEST_END
                             else None)
            (answered if event.event in ANSWERS else closed)[id(block)] = (block, ms)
    # Dynamo at INFO with span events logs no answer: its span's close ends it, no crash
    # cut it off ('no answer logged'). An answer line wins.
    answered = {**closed, **answered}
    # The caller's duration ends with its answer: lines its tasks logged after it (the
    # legacy pump's Unlinked response) showed a 500 sent at 24 ms as a request of 87 ms.
    # Its bar still spans them: the id was held until then.
    for block, ms in answered.values():
        if block.duration_ms is not None:  # None: its start, and so its duration, unknown
            block.duration_ms = ms
    for block in blocks:
        if id(block) not in answered and block.verdict.label in (NO_FINGERPRINTS, NO_OUTPUT):
            block.verdict = Verdict(NO_ANSWER)
