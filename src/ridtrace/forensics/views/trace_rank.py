"""Which of the requests matching an id `ridtrace trace` shows first, before building any.

A legacy incident can have thousands of callers holding one id. Building every caller's
block (its spans, its overlaps, its events) to keep the ten most relevant took
seconds per thousand; ranking needs only each caller's start and which error findings
it is part of, computed here on arrays. The shown blocks take their overlaps (the other
callers that held their id at once) from the same arrays.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ridtrace.contract import FRONTEND, WORKER
from ridtrace.forensics.records.requests import epoch_us
from ridtrace.forensics.views.verdicts import CROSSED, Verdict

# Relevance of each error finding a request can be part of, most relevant first; a
# request in none ranks after all of them.
_CROSSED, _DUPLICATE, _UNLINKED, _NONE = range(4)


Holders = dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]
# The column of the end (µs) of each span's hold on its request_id, which outlasts its
# own lines for a caller whose frontend died while its workers worked on
# (`rules.overlap.ids_held_in_flight`).
HELD_END = "held_end_us"


def standing_workers(requests: pd.DataFrame, owner: pd.Series) -> pd.DataFrame:
    """Worker spans that stand for a caller whose frontend logs are absent, as the
    duplicate_in_flight rule counts them, each under its caller's id (`owner`): retries
    of one caller are one request."""
    side = requests["side"].to_numpy()
    fronts = requests["trace_id"][side == FRONTEND].dropna().unique()
    orphan = (side == WORKER) & ~requests["trace_id"].isin(fronts).to_numpy()
    standing: pd.DataFrame = requests[orphan].assign(span_id=owner[orphan].astype(str))
    return standing


def callers_by_id(callers: pd.DataFrame) -> Holders:
    """Span ids, starts and ends (µs, of their hold: `HELD_END`) of the callers holding
    each request_id, in the order of `callers`."""
    rid = callers["request_id"].astype("object")
    known = rid.notna().to_numpy()
    if not known.any():
        return {}
    spans = callers["span_id"].astype(str).to_numpy()[known]
    starts = epoch_us(callers["start"])[known]
    ends = np.asarray(callers[HELD_END].to_numpy(), dtype=np.int64)[known]
    rows = pd.Series(np.arange(len(spans))).groupby(rid[known].astype(str).to_numpy()).indices
    return {str(key): (spans[at], starts[at], ends[at]) for key, at in rows.items()}


def overlapping(holders: Holders, rid: object, span: str, start: int, end: int) -> np.ndarray:
    """Span ids of the other callers that held `rid` during ``[start, end)`` (µs).

    As the duplicate_in_flight rule has it: two requests that start in the same
    microsecond overlap when either lasts longer than it (a zero-duration request inside
    another's span held the id while it did).
    """
    if not isinstance(rid, str) or rid not in holders:
        return np.array([], dtype=object)
    spans, starts, ends = holders[rid]
    met = (starts < end) & (start < ends)
    met |= (starts == start) & ((ends > starts) | (end > start))
    return np.asarray(spans[(spans != span) & met])


def overlaps_of_spans(holders: Holders, owner: str, spans: list[tuple[object, int, int]],
                      ) -> tuple[str, ...]:
    """The callers that held the id of any of `spans` (request_id, start, end) at once:
    a caller known by its worker spans overlaps another when one of those does."""
    found = [overlapping(holders, rid, owner, start, end) for rid, start, end in spans]
    return tuple(dict.fromkeys(str(x) for other in found for x in other.tolist()))


def ranked_owners(
    mine: pd.DataFrame, is_root: np.ndarray, verdicts: dict[str, Verdict],
    holders: Holders, lost: set[str], standing: set[str] | frozenset[str] = frozenset(),
) -> list[str]:
    """The callers (``_owner`` of `mine`) most relevant first: crossed, then in a
    duplicate_in_flight, then in an unlinked finding, then the others, each by start
    (the caller's, or its first span's when the caller is not in the logs; such a
    caller is in a duplicate when it is one of `standing`, `standing_workers`' callers)."""
    owners = mine["_owner"].astype(str).to_numpy()
    starts = epoch_us(mine["start"])
    ends = np.asarray(mine[HELD_END].to_numpy(), dtype=np.int64)
    first = pd.Series(starts).groupby(owners, sort=False).min()
    roots: dict[str, tuple[object, int, int]] = {}
    rids = mine["request_id"].astype("object").to_numpy()
    for at in np.flatnonzero(is_root):
        roots.setdefault(owners[at], (rids[at], int(starts[at]), int(ends[at])))
    spans_of: dict[str, list[tuple[object, int, int]]] = {}
    for at in np.flatnonzero(np.isin(owners, list(standing))):
        spans_of.setdefault(owners[at], []).append((rids[at], int(starts[at]), int(ends[at])))

    def rank(owner: str) -> tuple[int, int]:
        if owner not in roots:
            if overlaps_of_spans(holders, owner, spans_of.get(owner, [])):
                return _DUPLICATE, int(first[owner])
            return (_UNLINKED if owner in lost else _NONE), int(first[owner])
        rid, start, end = roots[owner]
        if verdicts[owner].label == CROSSED:
            return _CROSSED, start
        if len(overlapping(holders, rid, owner, start, end)):
            return _DUPLICATE, start
        return (_UNLINKED if owner in lost else _NONE), start

    return sorted(pd.unique(owners).tolist(), key=rank)
