"""Which of the requests matching an id `ridtrace trace` shows first, before building any.

A legacy incident can have thousands of callers holding one id. Building every caller's
block (its spans, its overlaps, its events) to keep the ten most relevant took
seconds per thousand; ranking needs only each caller's start and which error findings
it is part of, computed here on arrays.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ridtrace.forensics.records.requests import epoch_us
from ridtrace.forensics.views.verdicts import CROSSED, Verdict

# Relevance of each error finding a request can be part of, most relevant first; a
# request in none ranks after all of them.
_CROSSED, _DUPLICATE, _UNLINKED, _NONE = range(4)


def _callers_by_id(callers: pd.DataFrame) -> dict[str, tuple[np.ndarray, ...]]:
    """Span ids, starts and ends (µs) of the callers holding each request_id."""
    rid = callers["request_id"].astype("object")
    known = rid.notna().to_numpy()
    if not known.any():
        return {}
    spans = callers["span_id"].astype(str).to_numpy()[known]
    starts, ends = epoch_us(callers["start"])[known], epoch_us(callers["end"])[known]
    rows = pd.Series(np.arange(len(spans))).groupby(rid[known].astype(str).to_numpy()).indices
    return {key: (spans[at], starts[at], ends[at]) for key, at in rows.items()}


def ranked_owners(
    mine: pd.DataFrame, is_root: np.ndarray, verdicts: dict[str, Verdict],
    callers: pd.DataFrame, lost: set[str],
) -> list[str]:
    """The callers (``_owner`` of `mine`) most relevant first: crossed, then in a
    duplicate_in_flight, then in an unlinked finding, then the others, each by start
    (the caller's, or its first span's when the caller is not in the logs)."""
    owners = mine["_owner"].astype(str).to_numpy()
    starts, ends = epoch_us(mine["start"]), epoch_us(mine["end"])
    first = pd.Series(starts).groupby(owners, sort=False).min()
    roots: dict[str, tuple[object, int, int]] = {}
    rids = mine["request_id"].astype("object").to_numpy()
    for at in np.flatnonzero(is_root):
        roots.setdefault(owners[at], (rids[at], int(starts[at]), int(ends[at])))
    holders = _callers_by_id(callers)

    def rank(owner: str) -> tuple[int, int]:
        if owner not in roots:
            return (_UNLINKED if owner in lost else _NONE), int(first[owner])
        rid, start, end = roots[owner]
        if verdicts[owner].label == CROSSED:
            return _CROSSED, start
        spans, their_starts, their_ends = holders.get(str(rid), (np.array([]),) * 3)
        if isinstance(rid, str) and (
            (spans != owner) & (their_starts < end) & (start < their_ends)
        ).any():
            return _DUPLICATE, start
        return (_UNLINKED if owner in lost else _NONE), start

    return sorted(pd.unique(owners).tolist(), key=rank)
