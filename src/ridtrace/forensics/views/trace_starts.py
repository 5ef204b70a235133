"""When a caller began whose start line is not in the logs, as `ridtrace trace` shows it.

A log rotated away, or lines lost, can leave a request with its `request.end` and no
`request.start`: its span then starts at its first line read, its answer, and the
block showed an answer in 0 ms. The answer line says how long the request took
(`duration_ms`), which dates its start back; without it, the start is unknown, and the
view says so rather than print a duration. Dynamo's lines that state a duration date
their span back as they are read (`reading.sql.began`): such a span's start is known.
"""

from __future__ import annotations

import pandas as pd

from ridtrace.contract import (
    DURATION_MS,
    DYNAMO_SPAN_CREATED,
    DYNAMO_SPAN_FIRST_ENTRY,
    REQUEST_END,
    REQUEST_START,
    RESPONSE_SENT,
)
from ridtrace.forensics.views.file_clocks import line_offsets_us

# Lines that say where a frontend span began.
_START_EVENTS = (REQUEST_START,)
_START_MESSAGES = (DYNAMO_SPAN_CREATED, DYNAMO_SPAN_FIRST_ENTRY)
# A caller's own lines that end its request: ridtrace's `request.end`, Dynamo's
# `request completed` and `http response sent` (the last of them, in time order).
ANSWERS = frozenset((REQUEST_END, RESPONSE_SENT))
# A stated duration beyond this is no request's (as `reading.sql` bounds Dynamo's).
_LONGEST_MS = 7 * 24 * 3600 * 1000.0


def shifted_times(events: pd.DataFrame, offsets: dict[str, int]) -> pd.Series:
    """The events' times on the corrected clock (`offsets`: µs added per file)."""
    times = events["time"]
    if not offsets:
        return times
    shift = line_offsets_us(events, offsets)
    # In microseconds, the times' own unit: nanoseconds would cast the times to a
    # range of 1677-2262 and fail on a Go zero time (0001-01-01) in the logs.
    shifted: pd.Series = times + shift.astype("timedelta64[us]")
    return shifted


def unlogged_starts(
    events: pd.DataFrame, offsets: dict[str, int], callers: dict[str, pd.Timestamp]
) -> dict[str, pd.Timestamp | None]:
    """The callers among `callers` (span key → start in the requests frame) that logged
    no line where they began, each with the start its answer line states (its time less
    its `duration_ms`), or None when no line says when it began."""
    own = events[events["span_id"].isin(list(callers)).to_numpy()]
    if own.empty:
        return {}
    own = own.assign(_at=shifted_times(own, offsets))
    out: dict[str, pd.Timestamp | None] = {}
    for span, lines in own.groupby(own["span_id"].astype(str), sort=False):
        # Dynamo's span lines only (a side of their own): another logger's message
        # "new" is no span opening.
        started = (lines["event"].isin(_START_EVENTS).to_numpy()
                   | (lines["message"].isin(_START_MESSAGES).to_numpy()
                      & lines["side"].notna().to_numpy()))
        start = callers[str(span)]
        if started.any() or pd.isna(start):
            continue
        answers = lines[lines["event"].isin(ANSWERS).to_numpy()].sort_values("_at")
        stated = pd.to_numeric(answers[DURATION_MS].astype(object), errors="coerce")
        usable = (stated >= 0) & (stated <= _LONGEST_MS)
        if len(answers) and usable.iloc[-1] and answers["event"].iloc[-1] == RESPONSE_SENT:
            # Dynamo's answer states when it began (latency_ms): at its INFO level it logs
            # no start line, and none was lost.
            continue
        if not len(answers) or not usable.iloc[-1]:
            # Dated back by a duration its lines state (Dynamo's latency_ms): a known start.
            if start >= lines["_at"].min():
                out[str(span)] = None
            continue
        began = answers["_at"].iloc[-1] - pd.Timedelta(microseconds=round(
            float(stated.iloc[-1]) * 1000))
        out[str(span)] = min(began, start)
    return out
