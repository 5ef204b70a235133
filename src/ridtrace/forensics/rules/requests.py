"""Collapse the events frame into one row per request (a span), keyed by (trace_id, span_id).

The span id is the key because it is unique per request even when request ids
collide, which is exactly the situation forensics has to untangle.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import pandas as pd
import pyarrow as pa

from ridtrace.forensics.reading.schema import FRONTEND, WORKER

REQUEST_COLUMNS = (
    "trace_id",
    "span_id",
    "parent_span_id",
    "request_id",
    "x_request_id",
    "side",
    "start",
    "end",
    "outcome",
    "status",
    "fp_in",
    "fp_out",
    "deprecated",
    "route",
    "client",
    "method",
    "service",
    "worker",
    "error",
    "file",
    "first_line",
    "last_line",
    "lines",
    "unlinked",
    "unlinked_line",
    "foreign",
    "foreign_line",
    "deprecated_line",
)


def _line_codes(events: pd.DataFrame) -> tuple[np.ndarray, int]:
    """Request number per line (-1 for lines outside any request), in first-seen order."""
    scode, suniq = pd.factorize(events["span_id"])
    tcode, _ = pd.factorize(events["trace_id"])
    key = (tcode.astype(np.int64) + 1) * (len(suniq) + 1) + scode
    has = scode >= 0
    codes = np.full(len(events), -1, dtype=np.int64)
    sub, uniq = pd.factorize(key[has])
    codes[has] = sub
    return codes, len(uniq)


def group_rows(codes: np.ndarray, mask: np.ndarray, n: int, *, last: bool = False) -> np.ndarray:
    """Row of the first (or last) line of each group where `mask` holds (-1 if none).

    `codes` numbers the groups 0..n-1 (-1: in no group). Shared with the Dask engine's
    merge of partial requests, so both engines pick the same lines.
    """
    pos = np.flatnonzero(mask & (codes >= 0))
    if last:
        pos = pos[::-1]
    out = np.full(n, -1, dtype=np.int64)
    if len(pos):
        uniq, first = np.unique(codes[pos], return_index=True)
        out[uniq] = pos[first]
    return out


_STRING = pd.ArrowDtype(pa.string())


def epoch_us(times: pd.Series) -> np.ndarray:
    """Microseconds since the epoch of a tz-aware datetime Series (no copy of the data)."""
    return np.asarray(times.dt.as_unit("us").astype("int64").to_numpy(), dtype=np.int64)


def _lines_at(lines: np.ndarray, rows: np.ndarray) -> pd.arrays.IntegerArray:
    values = lines[np.maximum(rows, 0)] if len(lines) else np.zeros(len(rows), dtype=np.int64)
    return pd.arrays.IntegerArray(values.astype(np.int64), rows < 0)


def take_rows(series: pd.Series, rows: np.ndarray) -> Any:
    """Values of `series` at `rows`; -1 gives a missing value."""
    return series.array.take(rows, allow_fill=True)


def _notna(series: pd.Series) -> np.ndarray:
    return np.asarray(series.notna().to_numpy(), dtype=bool)


def build_requests(events: pd.DataFrame) -> pd.DataFrame:
    """One row per request span: ids, side, [start, end], outcome, fingerprints, evidence.

    `side` is ``worker`` for a span with any worker lifecycle line (or Dynamo's
    ``handle_payload`` span), otherwise ``frontend``. Scalar fields take the first
    non-null value among the span's lines, so ``request.end`` supplies ``fp_out``
    and ``worker.start`` supplies the worker's ``fp_in`` without format-specific code.
    """
    codes, n = _line_codes(events)
    spanned = codes >= 0
    rows = np.flatnonzero(spanned)
    first_row = group_rows(codes, spanned, n)
    times = epoch_us(events["time"])
    grouped = pd.DataFrame({"t": times[rows], "r": rows}).groupby(codes[rows], sort=True)
    agg = grouped.agg(tmin=("t", "min"), tmax=("t", "max"), last=("r", "max"), count=("r", "size"))
    out: dict[str, Any] = {}
    for col in ("trace_id", "span_id"):
        out[col] = take_rows(events[col], first_row)
    # The id a request *ends* with is the one it held in flight: under the legacy id
    # policy the middleware logs a minted id at request.start, then the handler
    # re-keys the request by the client's id — and that is the id that collides.
    rid = events["request_id"]
    rid_mask = _notna(rid)
    last_row = agg["last"].to_numpy()
    src = last_row if rid_mask[rows].all() else group_rows(codes, rid_mask, n, last=True)
    out["request_id"] = take_rows(rid, src)
    for col in (
        "parent_span_id", "x_request_id", "outcome", "status", "fp_in", "fp_out",
        "route", "client", "method", "service", "worker", "error",
    ):
        series = events[col]
        mask = _notna(series)
        src = first_row if mask[rows].all() else group_rows(codes, mask, n)
        out[col] = take_rows(series, src)
    is_worker = np.asarray((events["side"] == WORKER).fillna(False).to_numpy(), dtype=bool)
    worker_rows = group_rows(codes, is_worker, n)
    out["side"] = np.where(worker_rows >= 0, WORKER, FRONTEND)
    out["start"] = pd.to_datetime(agg["tmin"].to_numpy(), unit="us", utc=True)
    out["end"] = pd.to_datetime(agg["tmax"].to_numpy(), unit="us", utc=True)
    files = events["file"]
    lines = events["line"].to_numpy()
    out["file"] = take_rows(files, first_row)
    out["first_line"] = lines[first_row]
    out["last_line"] = lines[agg["last"].to_numpy()]
    out["lines"] = agg["count"].to_numpy()
    event = events["event"]
    for name, col in (("response.unlinked", "unlinked"), ("stream.foreign_chunk", "foreign")):
        hit_rows = group_rows(codes, np.asarray((event == name).fillna(False), dtype=bool), n)
        if col == "unlinked":  # Dynamo puts the text in `error`, ridtrace in `message`
            text = take_rows(events["error"], hit_rows)
            msg = take_rows(events["message"].astype(_STRING), hit_rows)
            out[col] = pd.Series(text).fillna(pd.Series(msg)).array
        else:
            out[col] = take_rows(events["chunk_request_id"], hit_rows)
        out[f"{col}_line"] = _lines_at(lines, hit_rows)
    dep_rows = group_rows(codes, _notna(events["deprecated"]), n)
    out["deprecated"] = take_rows(events["deprecated"], dep_rows)
    out["deprecated_line"] = _lines_at(lines, dep_rows)
    return cast(pd.DataFrame, pd.DataFrame({col: out[col] for col in REQUEST_COLUMNS}))
