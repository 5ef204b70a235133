"""One request's story across frontend and workers, found by request_id or x_request_id."""

from __future__ import annotations

from typing import cast

import numpy as np
import pandas as pd

from ridtrace.contract import FRONTEND, WORKER
from ridtrace.forensics.records.requests import epoch_us

TIMELINE_COLUMNS = (
    "request",
    "side",
    "span_id",
    "time",
    "since_start_ms",
    "delta_ms",
    "event",
    "level",
    "message",
    "status",
    "outcome",
    "request_id",
    "x_request_id",
    "file",
    "line",
)


def match_requests(requests: pd.DataFrame, ident: str) -> pd.DataFrame:
    """Spans matching `ident` (request_id, x_request_id or span_id) and their workers.

    Adds a ``request`` column naming the frontend span each row belongs to, so one
    caller's frontend span and worker spans are listed together.
    """
    hit = (
        (requests["request_id"] == ident).fillna(False)
        | (requests["x_request_id"] == ident).fillna(False)
        | (requests["span_id"] == ident).fillna(False)
    )
    roots = requests[hit.to_numpy() & (requests["side"] == FRONTEND).to_numpy()]
    root_ids = set(roots["span_id"].dropna())
    is_worker = requests["side"] == WORKER
    child = is_worker & requests["parent_span_id"].isin(root_ids)
    orphan = is_worker & hit & ~requests["parent_span_id"].isin(root_ids)
    out = requests[(requests["span_id"].isin(root_ids) & ~is_worker) | child | orphan].copy()
    request = out["span_id"].astype("object").where(
        out["side"] == FRONTEND, out["parent_span_id"].astype("object")
    )
    out["request"] = request.fillna(out["span_id"].astype("object"))
    return cast(pd.DataFrame, out.sort_values(["start"], kind="stable"))


def timeline(events: pd.DataFrame, matched: pd.DataFrame) -> pd.DataFrame:
    """The matched spans' lines in time order per caller, with gaps in milliseconds."""
    if matched.empty:
        return cast(pd.DataFrame, pd.DataFrame(columns=list(TIMELINE_COLUMNS)))
    owner = dict(zip(matched["span_id"].astype("object"), matched["request"], strict=True))
    rows = events[events["span_id"].isin(list(owner)).to_numpy()].copy()
    rows["request"] = rows["span_id"].astype("object").map(owner)
    side = dict(zip(matched["span_id"].astype("object"), matched["side"], strict=True))
    rows["side"] = rows["span_id"].astype("object").map(side)
    first_seen = {r: i for i, r in enumerate(dict.fromkeys(matched["request"]))}
    rows["_order"] = rows["request"].map(first_seen)
    rows = rows.sort_values(["_order", "time", "file", "line"], kind="stable")
    us = epoch_us(rows["time"])
    group = rows["_order"].to_numpy()
    starts = pd.Series(us).groupby(group).transform("min").to_numpy()
    prev = np.concatenate([[0], us[:-1]])
    same = np.concatenate([[False], group[1:] == group[:-1]])
    rows["since_start_ms"] = (us - starts) / 1000.0
    rows["delta_ms"] = np.where(same, (us - prev) / 1000.0, 0.0)
    return cast(pd.DataFrame, rows[list(TIMELINE_COLUMNS)].reset_index(drop=True))
