"""Each line's clock offset, as the views move it: its file's, estimated per file.

A file with no offset of its own is on the reference clock, unless it is a copy: one
log collected twice, or a backup beside it, merges into the spans of the file it
copies, whose offset is the one estimated (`rules.skew`). Such a file's lines were
shown on the raw clock, a worker working after its caller had answered.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["line_offsets_us"]


def line_offsets_us(events: pd.DataFrame, offsets: dict[str, int]) -> np.ndarray:
    """µs to add to each line of `events` (`offsets`: µs per file that has one)."""
    files = events["file"].astype(str)
    by_file = files.map(offsets)
    if by_file.isna().any() and by_file.notna().any():
        by_file = by_file.fillna(files.map(_offsets_of_copies(files, by_file, events["span_id"])))
    return by_file.fillna(0).to_numpy(dtype=np.int64)


def _offsets_of_copies(files: pd.Series, by_file: pd.Series, spans: pd.Series) -> dict[str, int]:
    """The files with no offset whose every span is also logged by a file with one (a
    copy of it), each with that offset. A file with a span of its own keeps the
    reference clock: a frontend whose span id a worker's line repeats is no copy."""
    named = (spans.notna() & (spans.astype(str) != "")).to_numpy()
    rows = pd.DataFrame({"file": files.to_numpy()[named],
                         "span": spans.astype(str).to_numpy()[named],
                         "offset": by_file.to_numpy()[named]})
    rows["span_offset"] = rows.groupby("span")["offset"].transform("first")
    unknown = rows[rows["offset"].isna()]
    per_file = unknown.groupby("file")["span_offset"].agg(["count", "size", "first"])
    copies = per_file[(per_file["count"] == per_file["size"]) & (per_file["size"] > 0)]
    return {str(file): int(offset) for file, offset in copies["first"].items()}
