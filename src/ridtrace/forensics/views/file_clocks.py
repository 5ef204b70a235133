"""Each line's clock offset, as the views move it: its file's, estimated per file.

A file with no offset of its own is on the reference clock, unless it is a copy: one
log collected twice, or a backup beside it (taken earlier or later, so with fewer or
more lines), merges into the spans of the file it copies, whose offset is the one
estimated (`rules.skew`). Such a file's lines were shown on the raw clock, a worker
working after its caller had answered.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["line_clocks", "line_offsets_us"]


def line_clocks(events: pd.DataFrame, offsets: dict[str, int]) -> dict[str, int]:
    """`offsets` (µs per file that has one) and each copy's, judged on all of `events`:
    the lines of every file read, not those of the requests a view shows, where a
    frontend's log whose one span a worker's line repeats looked a copy of that worker's.

    A copy is a file with no offset most of whose spans a file with an offset logged too;
    it takes the offset most of those spans have. A file with spans of its own, a
    frontend's whose span id a worker's line repeats, keeps the reference clock.
    """
    if not offsets or events.empty:
        return dict(offsets)
    files = events["file"].astype(str)
    spans = events["span_id"]
    named = (spans.notna() & (spans.astype(str) != "")).to_numpy()
    rows = pd.DataFrame({"file": files.to_numpy()[named],
                         "span": spans.astype(str).to_numpy()[named]}).drop_duplicates()
    rows["offset"] = rows["file"].map(offsets)
    rows["span_offset"] = rows.groupby("span")["offset"].transform("first")
    unknown = rows[rows["offset"].isna()]
    if unknown.empty:
        return dict(offsets)
    shared = unknown.groupby("file")["span_offset"].agg(["count", "size"])
    copies = shared.index[2 * shared["count"] > shared["size"]]
    taken = unknown[unknown["file"].isin(copies) & unknown["span_offset"].notna()]
    most = taken.groupby("file")["span_offset"].agg(lambda found: found.mode().iloc[0])
    return {**offsets, **{str(file): int(offset) for file, offset in most.items()}}


def line_offsets_us(events: pd.DataFrame, clocks: dict[str, int]) -> np.ndarray:
    """µs to add to each line of `events` (`clocks`: `line_clocks`'s, µs per file)."""
    return events["file"].astype(str).map(clocks).fillna(0).to_numpy(dtype=np.int64)
