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

from ridtrace.contract import FRONTEND, OUTCOME_CONFLICT, WORKER
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
    of one caller are one request. Not one a worker refused (a Conflict): that caller
    never held the id, the worker's other caller did (`rules.overlap._id_holders`)."""
    side = requests["side"].to_numpy()
    fronts = requests["trace_id"][side == FRONTEND].dropna().unique()
    refused = (requests["outcome"] == OUTCOME_CONFLICT).fillna(False).to_numpy(dtype=bool)
    orphan = (side == WORKER) & ~refused & ~requests["trace_id"].isin(fronts).to_numpy()
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


def _meets(q_start: np.ndarray, q_end: np.ndarray, start: np.ndarray, end: np.ndarray,
           ) -> np.ndarray:
    """Whether each hold ``[start, end)`` overlaps each query's, as `overlapping` asks."""
    met = (start < q_end) & (q_start < end)
    return np.asarray(met | ((start == q_start) & ((end > start) | (q_end > q_start))))


def _meeting_counts(starts: np.ndarray, ends: np.ndarray, q_start: np.ndarray,
                    q_end: np.ndarray) -> np.ndarray:
    """How many of the holds ``[starts, ends)`` each query overlaps (`_meets`), by binary
    search on the sorted starts and ends: holds that start after the query's start and
    before its end, holds that started before it and still held the id then, and holds
    starting with it (which meet it unless both last no time). Needs every end at or
    after its start."""
    by_start, by_end = np.sort(starts), np.sort(ends)
    instants = np.sort(starts[ends == starts])
    before = np.searchsorted(by_start, q_start, "left")
    through = np.searchsorted(by_start, q_start, "right")
    instant_here = (np.searchsorted(instants, q_start, "right")
                    - np.searchsorted(instants, q_start, "left"))
    later = np.maximum(np.searchsorted(by_start, q_end, "left") - through, 0)
    # Ended by the query's start, but for the instants at it (those start with it).
    ended = np.searchsorted(by_end, q_start, "right") - instant_here
    same_start = through - before
    together = np.where(q_end > q_start, same_start, same_start - instant_here)
    return np.asarray(later + (before - ended) + together)


def _own_meetings(spans: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                  q_span: np.ndarray, q_start: np.ndarray, q_end: np.ndarray) -> np.ndarray:
    """How many holds of each query's own span (its caller's, excluded from its overlaps)
    each query overlaps: one hold per caller but for worker spans standing for theirs."""
    names, first, sizes = np.unique(spans, return_index=True, return_counts=True)
    code = pd.Index(names).get_indexer(q_span)
    own = np.zeros(len(q_span), dtype=np.int64)
    single = (code >= 0) & (sizes[np.maximum(code, 0)] == 1)
    hold = first[code[single]]
    own[single] = _meets(q_start[single], q_end[single], starts[hold], ends[hold])
    for at in np.flatnonzero((code >= 0) & ~single):
        mine = spans == q_span[at]
        own[at] = int(_meets(q_start[at], q_end[at], starts[mine], ends[mine]).sum())
    return own


def _overlapping_any(holders: Holders, rid: object, q_span: np.ndarray,
                     q_start: np.ndarray, q_end: np.ndarray) -> np.ndarray:
    """Whether each query (its caller's span id, start, end) overlaps another caller's
    hold on `rid`: `overlapping` asked of many at once, in O(n log n) where asking each
    in turn cost O(n) apiece (20k callers of one id took minutes)."""
    if not isinstance(rid, str) or rid not in holders:
        return np.zeros(len(q_span), dtype=bool)
    spans, starts, ends = holders[rid]
    if (ends < starts).any() or (q_end < q_start).any():  # not seen; asked one by one
        return np.array([len(overlapping(holders, rid, str(q), int(s), int(e))) > 0
                         for q, s, e in zip(q_span, q_start, q_end, strict=True)], dtype=bool)
    counts = _meeting_counts(starts, ends, q_start, q_end)
    return np.asarray(counts > _own_meetings(spans, starts, ends, q_span, q_start, q_end))


def _in_duplicates(holders: Holders, queries: pd.DataFrame) -> set[str]:
    """The owners of `queries` (owner, request_id, start, end) any of whose spans
    overlaps another caller's hold on its id."""
    found: set[str] = set()
    for rid, asked in queries.groupby("request_id", sort=False):
        owners = asked["owner"].to_numpy()
        met = _overlapping_any(holders, rid, owners, asked["start"].to_numpy(np.int64),
                               asked["end"].to_numpy(np.int64))
        found.update(owners[met].tolist())
    return found


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
    rids = mine["request_id"].astype("object").to_numpy()
    root_rows = np.flatnonzero(is_root)
    # A caller's first root row is its own (as `_block` takes it).
    root_rows = root_rows[~pd.Index(owners[root_rows]).duplicated(keep="first")]
    rooted = set(owners[root_rows].tolist())
    # Hashed: numpy's isin on object arrays took seconds for 20k callers.
    stood = np.flatnonzero(pd.Index(owners).isin(list(set(standing) - rooted)))
    asked = np.concatenate([root_rows, stood])
    queries = pd.DataFrame({
        "owner": owners[asked], "request_id": rids[asked],
        "start": starts[asked], "end": ends[asked],
    })
    queries = queries[np.array([isinstance(rid, str) for rid in queries["request_id"]],
                               dtype=bool)]
    duplicated = _in_duplicates(holders, queries)
    root_start = dict(zip(owners[root_rows].tolist(), starts[root_rows].tolist(), strict=True))

    def rank(owner: str) -> tuple[int, int]:
        start = root_start.get(owner)
        if start is None:
            start = int(first[owner])
        elif verdicts[owner].label == CROSSED:
            return _CROSSED, start
        if owner in duplicated:
            return _DUPLICATE, start
        return (_UNLINKED if owner in lost else _NONE), start

    return sorted(pd.unique(owners).tolist(), key=rank)
