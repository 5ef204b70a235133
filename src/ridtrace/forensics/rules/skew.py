"""Clock skew between log files, bounded from both sides by the spans that link them.

Every process stamps its lines with its own clock. A worker's span lies inside its
caller's request: it starts after the caller started and ends before the caller
ended. Each worker span linked to a caller in another file therefore bounds that
file's offset from below (``caller.start - span.start``) and from above
(``caller.end - span.end``), as Jaeger's clock-skew adjuster does for one span. The
offset of a file is the value inside all its bounds closest to zero: no correction
when the clocks already agree. Frontend files are the reference; a file with no link
keeps its own clock.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import pandas as pd

from ridtrace.contract import FRONTEND, OUTCOME_OK, WORKER

# Callers and workers in one file share a clock: only links across files say anything.
_NS_PER_US = 1000


def clock_offsets(requests: pd.DataFrame) -> dict[str, int]:
    """Offset in microseconds to add to each worker file's times (only files that need one)."""
    side = requests["side"].to_numpy()
    # Only a caller that finished well waited for its worker: a failed one (an Unlinked
    # error, a client gone) may end while its worker still runs.
    served = (requests["outcome"] == OUTCOME_OK).fillna(False).to_numpy()
    callers = requests.loc[(side == FRONTEND) & served, ["span_id", "start", "end", "file"]]
    workers = requests.loc[side == WORKER, ["parent_span_id", "start", "end", "file"]]
    if callers.empty or workers.empty:
        return {}
    callers = callers.drop_duplicates("span_id").rename(
        columns={"span_id": "parent_span_id", "start": "c_start", "end": "c_end", "file": "c_file"}
    )
    links = workers.merge(callers, on="parent_span_id", how="inner")
    links = links[links["file"].astype(str).to_numpy() != links["c_file"].astype(str).to_numpy()]
    if links.empty:
        return {}
    lo = _us(links["c_start"]) - _us(links["start"])
    hi = _us(links["c_end"]) - _us(links["end"])
    files = links["file"].astype(str).to_numpy()
    offsets: dict[str, int] = {}
    for name in np.unique(files):
        mine = files == name
        offset = _best_offset(lo[mine], hi[mine])
        if offset:
            offsets[str(name)] = offset
    return offsets


def _best_offset(lo: np.ndarray, hi: np.ndarray) -> int:
    """The offset inside the most link intervals ``[lo, hi]``, the one closest to zero.

    When every link agrees this is the value closest to zero inside all bounds. A link
    whose caller lost a line (a torn write, a rotated file) bounds wrongly; it is
    outvoted instead of dragging the file's clock.
    """
    valid = lo <= hi
    if not valid.any():  # no span fits its caller: the middle of the tightest bounds
        return (int(lo.max()) + int(hi.min())) // 2
    lo, hi = lo[valid], hi[valid]
    points = np.concatenate([lo, hi])
    # At equal points an interval's start counts before another's end: bounds are closed.
    steps = np.concatenate([np.ones(len(lo), dtype=np.int64), -np.ones(len(hi), dtype=np.int64)])
    order = np.lexsort((-steps, points))
    points, coverage = points[order], np.cumsum(steps[order])
    best = coverage.max()
    starts = np.flatnonzero(coverage == best)
    ends = starts + 1  # the next point closes the segment of best coverage
    low, high = points[starts], points[np.minimum(ends, len(points) - 1)]
    candidates = np.clip(0, low, high)
    return int(candidates[np.argmin(np.abs(candidates))])


def _us(times: pd.Series) -> np.ndarray:
    return np.asarray(times.dt.as_unit("us").astype("int64").to_numpy(), dtype=np.int64)


def apply_offsets(requests: pd.DataFrame, offsets: dict[str, int]) -> pd.DataFrame:
    """`requests` with every span of an offset file moved onto the reference clock."""
    if not offsets:
        return requests
    shift_us = requests["file"].astype(str).map(offsets).fillna(0).to_numpy(dtype=np.int64)
    shift = pd.to_timedelta(shift_us * _NS_PER_US, unit="ns")
    return cast(
        pd.DataFrame,
        requests.assign(start=requests["start"] + shift, end=requests["end"] + shift),
    )


def correct_skew(requests: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, int]]:
    """Estimate the offsets and apply them: the requests on one clock, and the offsets."""
    offsets = clock_offsets(requests)
    return apply_offsets(requests, offsets), offsets
