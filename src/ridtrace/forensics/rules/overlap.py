"""The five findings, each a pure function: requests DataFrame in, findings DataFrame out.

A findings frame has the columns of `FINDING_COLUMNS`; ``evidence`` holds lists of
``{"file", "line"}`` dicts, the lines an operator opens to check the claim.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

import pandas as pd

from ridtrace.forensics.reading.schema import FINDING_COLUMNS, FRONTEND, SEVERITY, WORKER

Evidence = list[dict[str, Any]]


def present(value: Any) -> bool:
    """Not None, NA or NaN (pandas spells a missing value in several ways)."""
    return value is not None and value is not pd.NA and value == value


def _ev(file: Any, *lines: Any) -> Evidence:
    seen: list[dict[str, Any]] = []
    for line in lines:
        if not present(line):
            continue
        item = {"file": str(file), "line": int(line)}
        if item not in seen:
            seen.append(item)
    return seen


def _str(value: Any) -> str | None:
    return str(value) if present(value) else None


def findings_frame(kind: str, rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Build a findings frame of one kind from dicts (missing keys become null)."""
    records = []
    for row in rows:
        rec = {col: row.get(col) for col in FINDING_COLUMNS}
        rec["kind"], rec["severity"] = kind, SEVERITY[kind]
        for col in ("request_id", "x_request_id", "span_id"):
            rec[col] = _str(rec[col])
        records.append(rec)
    return cast(pd.DataFrame, pd.DataFrame.from_records(records, columns=list(FINDING_COLUMNS)))


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


_CLUSTER_COLUMNS = [
    "request_id", "x_request_id", "span_id", "parent_span_id", "side", "start", "end", "file",
    "first_line", "last_line",
]


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
    cand = requests.loc[(front | orphan) & maybe, _CLUSTER_COLUMNS]
    # A worker span stands for its caller: retries of one caller are one request.
    ident = cand["parent_span_id"].where(cand["side"] == WORKER, cand["span_id"])
    return cast(pd.DataFrame, cand.assign(ident=ident.fillna(cand["span_id"])))


def _cluster_findings(
    kind: str, clusters: pd.DataFrame, key: str, min_distinct: str
) -> pd.DataFrame:
    rows = []
    for _, grp in clusters.groupby("cluster", sort=True):
        if grp[min_distinct].nunique() < 2:
            continue
        first = grp.iloc[0]
        spans = ", ".join(str(s) for s in grp["span_id"])
        evidence: Evidence = []
        for rec in grp.itertuples(index=False):
            evidence += _ev(rec.file, rec.first_line, rec.last_line)
        what = "request_id" if key == "request_id" else "client x_request_id"
        rows.append(
            {
                "request_id": first["request_id"],
                "x_request_id": first["x_request_id"],
                "span_id": first["span_id"],
                "time": first["start"],
                "detail": f"{len(grp)} requests held {what} {first[key]!s} at overlapping "
                f"times (spans {spans})",
                "evidence": evidence,
            }
        )
    return findings_frame(kind, rows)


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
    cols = ["request_id", "x_request_id", "span_id", "start", "deprecated", "file",
            "deprecated_line"]
    dep = requests.loc[mask, cols]
    rows = [
        {
            "request_id": r.request_id,
            "x_request_id": r.x_request_id,
            "span_id": r.span_id,
            "time": r.start,
            "detail": f"sent deprecated header {r.deprecated}",
            "evidence": _ev(r.file, r.deprecated_line),
        }
        for r in dep.itertuples(index=False)
    ]
    return findings_frame("deprecated_header", rows)
