"""Findings about ids held at overlapping times: duplicate in flight, client id reuse,
and the info finding for deprecated id headers.

Each rule is a pure function, requests DataFrame in, findings DataFrame out, working
on whole columns: its cost follows the number of requests, not of findings.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ridtrace.contract import FRONTEND, WORKER
from ridtrace.forensics.rules.findings import (
    evidence,
    findings_frame,
    line_numbers,
    texts,
)

_CLUSTER_COLUMNS = [
    "request_id", "x_request_id", "span_id", "parent_span_id", "side", "start", "end", "file",
    "first_line", "last_line",
]


def _overlap_clusters(df: pd.DataFrame, key: str) -> pd.DataFrame:
    """Tag rows whose [start, end] overlaps an earlier row with the same `key`.

    Sorted by start within each key, a row opens a new cluster when it starts at or
    after the latest end seen so far: back-to-back reuse is not an overlap.
    """
    keys = df[key]
    df = df[(keys.notna() & keys.duplicated(keep=False)).to_numpy()]
    if df.empty:
        return cast(pd.DataFrame, df.assign(cluster=pd.Series(dtype="int64")))
    df = df.sort_values([key, "start"], kind="stable")
    prev_end = df.groupby(key, sort=False, observed=True)["end"].cummax()
    prev_end = prev_end.groupby(df[key], sort=False, observed=True).shift(1)
    new = prev_end.isna().to_numpy() | (df["start"] >= prev_end).fillna(True).to_numpy()
    df = df.assign(cluster=new.cumsum())
    size = df.groupby("cluster")["cluster"].transform("size")
    return cast(pd.DataFrame, df[size.to_numpy() > 1])


def _candidates(requests: pd.DataFrame) -> pd.DataFrame:
    """Frontend requests, plus worker spans of traces whose frontend logs are absent."""
    side = requests["side"].to_numpy()
    front = side == FRONTEND
    worker = side == WORKER
    orphan = worker.copy()
    if worker.any() and front.any():
        traces = requests["trace_id"]
        orphan[worker] = ~traces[worker].isin(traces[front]).to_numpy()
    # Only a request_id seen on two spans can be a duplicate: filter before copying columns.
    rid = requests["request_id"]
    maybe = (rid.notna() & rid.duplicated(keep=False)).to_numpy()
    keep = (front | orphan) & maybe
    cand = requests.loc[keep, _CLUSTER_COLUMNS]
    # A worker span stands for its caller: retries of one caller are one request.
    return cast(pd.DataFrame, cand.assign(ident=caller_of(requests)[keep].to_numpy()))


def caller_of(requests: pd.DataFrame) -> pd.Series:
    """The span id of the caller each span works for (column ``caller`` when present).

    A worker span works for its parent; so does a frontend span nested in another
    frontend span (Dynamo's ``generate`` inside ``http-request``). Any other span is
    its own caller.
    """
    if "caller" in requests.columns:
        return requests["caller"]
    span = pa.array(requests["span_id"], type=pa.string())
    parent = pa.array(requests["parent_span_id"], type=pa.string())
    side = requests["side"].to_numpy()
    front = side == FRONTEND
    fronts = span.filter(pa.array(front))
    nested = front & pc.fill_null(pc.is_in(parent, value_set=fronts), False).to_numpy(
        zero_copy_only=False
    )
    up = ((side == WORKER) | nested) & pc.is_valid(parent).to_numpy(zero_copy_only=False)
    caller = pc.if_else(pa.array(up), parent, span)
    out: pd.Series = pd.Series(caller, index=requests.index, dtype=pd.ArrowDtype(pa.string()))
    return out


def _cluster_findings(
    kind: str, clusters: pd.DataFrame, key: str, min_distinct: str
) -> pd.DataFrame:
    """One finding per cluster holding at least two distinct `min_distinct` values."""
    if clusters.empty:
        return findings_frame(kind)
    by = clusters.groupby("cluster", sort=True)
    distinct = by[min_distinct].transform("nunique").to_numpy()
    rows = clusters[distinct >= 2]
    if rows.empty:
        return findings_frame(kind)
    cluster = rows["cluster"].to_numpy()
    starts = np.flatnonzero(np.r_[True, cluster[1:] != cluster[:-1]])
    ends = np.r_[starts[1:], len(cluster)]
    spans = texts(rows["span_id"])
    files = texts(rows["file"])
    items = evidence(
        [f or "" for f in files], line_numbers(rows["first_line"]), line_numbers(rows["last_line"])
    )
    key_text = texts(rows[key])
    what = "request_id" if key == "request_id" else "client x_request_id"
    details, proof = [], []
    for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True):
        names = ", ".join(str(s) for s in spans[lo:hi])
        details.append(
            f"{hi - lo} requests held {what} {key_text[lo]} at overlapping times (spans {names})"
        )
        proof.append([item for per_row in items[lo:hi] for item in per_row])
    first = rows.iloc[starts]
    return findings_frame(kind, {
        "request_id": texts(first["request_id"]),
        "x_request_id": texts(first["x_request_id"]),
        "span_id": texts(first["span_id"]),
        "time": list(first["start"]),
        "detail": details,
        "evidence": proof,
    })


def duplicate_in_flight(requests: pd.DataFrame) -> pd.DataFrame:
    """Distinct requests (different span) that held the same request_id at overlapping times."""
    clusters = _overlap_clusters(_candidates(requests), "request_id")
    return _cluster_findings("duplicate_in_flight", clusters, "request_id", "ident")


def client_id_reuse(requests: pd.DataFrame) -> pd.DataFrame:
    """Overlapping requests that shared a client x_request_id under distinct request_ids."""
    xrid = requests["x_request_id"]
    maybe = (xrid.notna() & xrid.duplicated(keep=False)).to_numpy()
    front = requests.loc[(requests["side"].to_numpy() == FRONTEND) & maybe, _CLUSTER_COLUMNS]
    clusters = _overlap_clusters(front, "x_request_id")
    return _cluster_findings("client_id_reuse", clusters, "x_request_id", "request_id")


def deprecated_header(requests: pd.DataFrame) -> pd.DataFrame:
    """One info finding per request that sent a deprecated id header."""
    mask = requests["deprecated"].notna().to_numpy() & (requests["side"].to_numpy() == FRONTEND)
    dep = requests.loc[mask]
    files = [f or "" for f in texts(dep["file"])]
    return findings_frame("deprecated_header", {
        "request_id": texts(dep["request_id"]),
        "x_request_id": texts(dep["x_request_id"]),
        "span_id": texts(dep["span_id"]),
        "time": list(dep["start"]),
        "detail": [f"sent deprecated header {h}" for h in texts(dep["deprecated"])],
        "evidence": evidence(files, line_numbers(dep["deprecated_line"])),
    })
