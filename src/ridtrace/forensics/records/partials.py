"""Per-request rows built in pieces: partial requests per part, then combined.

A part is one file (the local engine) or one block of a file (the Dask engine). Its
per-span rows (`ridtrace.forensics.reading.sql.SPANS`) hold, per span, the first
non-null value of each field, the last ``request_id``, ``[start, end]``, the line
count and evidence lines, each with the file it is in. Those are all decomposable, so
partials of one span from several parts combine exactly, given their order: within a
file, the part order (``_part``: parts are consecutive ranges of the input in the
order it is read); across files, time (`_in_time_order`). Both engines end in
`finished.finish_requests`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ridtrace.contract import WORKER
from ridtrace.forensics.records.pieces import SpanPiece
from ridtrace.forensics.records.requests import (
    LINE_FILES,
    REQUEST_COLUMNS,
    VIEW_COLUMNS,
    group_rows,
    latest_rows,
    take_rows,
)

PART, POS, KEY = "_part", "_pos", "_key"
# Whether a partial's deprecated headers are the ones a request's own line lists (not a
# WARN's single header): a span cut between its WARN and its list takes the list.
LISTED = "_deprecated_listed"
# Whether a partial's route is its end line's (`span_sql.span_aggregates`' route_ended).
ROUTE_ENDED = "_route_ended"
# A partial's first line's time; its start may be earlier (`_in_time_order`).
FIRST_TIME = "_first_time"
# A partial holds a ridtrace start line (`reading.sql.started`): its span starts there.
STARTED = "_started"
# A partial's span is one Dynamo opens inside its http-request span
# (`contract.DYNAMO_INNER_SPANS`), its parent found by `finished.nest_inner_spans`.
INNER = "_inner"
# A partial's span is Dynamo's ``http-request``, which such a span is opened inside.
OUTER = "_outer"
# Evidence line columns. In a partial they hold ``part << 32 | line within the
# partition``: combining carries each value with the row it came from, and the client
# resolves them once every partition's line count is known — no barrier before the
# shuffle, so partials stream into it instead of waiting in memory.
LINE_COLUMNS = tuple(LINE_FILES)
# The file of each evidence line, as a file code (-1 where the line is missing): a
# span's lines can lie in several files, and a line number means nothing without it.
FILE_COLUMNS = tuple(LINE_FILES.values())
LINE_BITS = 32
KEYS = ["trace_id", "span_id"]
# Fields whose value is the first non-null one among a span's lines.
_FIRST = (
    "parent_span_id", "x_request_id", "outcome", "status", "fp_in", "fp_out", "route",
    "client", "method", "service", "worker", "error", "answer_us",
)
# (value, line) pairs taken together from the first line that has the line.
_PAIRS = (("unlinked", "unlinked_line"), ("foreign", "foreign_line"),
          ("deprecated", "deprecated_line"))
ARROW_STRING = pd.ArrowDtype(pa.string())
# Text in the partials, which Dask shuffles: pandas' Arrow-backed string dtype. Dask's
# p2p shuffle rebuilds its output partitions with it only when its frame has such a
# column; `ArrowDtype` strings come back as Python `str` objects — 3–4× the Arrow data
# on the worker at the peak of the shuffle, and `combine_requests` paid to undo it.
SHUFFLE_STRING = pd.StringDtype("pyarrow")


def is_text(dtype: Any) -> bool:
    return isinstance(dtype, (pd.StringDtype, pd.ArrowDtype)) or dtype is np.dtype(object)


def partial_frame(
    spans: pa.Table, lines: dict[str, np.ndarray], *, file_id: int, part: int
) -> pd.DataFrame:
    """A part's per-span rows (`LogTable.spans`) as the partial frame combining takes."""
    return pieces_frame([SpanPiece(spans, lines, file_id, part)])


def pieces_frame(pieces: Sequence[SpanPiece], *, shuffled: bool = True) -> pd.DataFrame:
    """Several parts' per-span rows (in part order) as one partial frame.

    A frame costs pandas about a millisecond whatever its size: a directory of small
    files makes one frame per batch of them (`reading.small_files`), not one per file.
    `shuffled`: its text is in `SHUFFLE_STRING` for Dask to shuffle; else in the
    `ARROW_STRING` that `combine_requests` works in, as DuckDB gave it: the local read
    cast every text column to pandas' 64-bit offsets and back (~12k page faults on the
    incident set, docs/performance.md).
    """
    sizes = np.array([p.spans.num_rows for p in pieces], dtype=np.int64)
    n = int(sizes.sum())
    file_id = np.repeat(np.array([p.file_id for p in pieces], dtype=np.int32), sizes)
    part = np.repeat(np.array([p.part for p in pieces], dtype=np.int64), sizes)
    if len(pieces) == 1:
        spans, lines = pieces[0].spans, pieces[0].lines
    else:
        spans = pa.concat_tables([p.spans for p in pieces], promote_options="permissive")
        lines = {c: np.concatenate([p.lines[c] for p in pieces]) for c in pieces[0].lines}
    out: dict[str, Any] = {}
    frame = spans.to_pandas(types_mapper=_shuffle_text if shuffled else _arrow_string)
    for line_col, file_col in LINE_FILES.items():
        out[file_col] = np.where(lines[line_col] < 0, -1, file_id).astype(np.int32)
    for col in REQUEST_COLUMNS:
        if col in FILE_COLUMNS:
            continue
        if col in LINE_COLUMNS:
            values = lines[col]
            if col in ("first_line", "last_line"):
                out[col] = values + (part << LINE_BITS)
            else:
                missing = values < 0
                shifted = np.where(missing, 0, values + (part << LINE_BITS))
                out[col] = pd.arrays.IntegerArray(shifted.astype(np.int64), missing)
        elif col == "lines":
            out[col] = np.asarray(frame[col].to_numpy(), dtype=np.int64)
        else:
            out[col] = frame[col].array
    views = [col for col in VIEW_COLUMNS if col in spans.column_names]
    result = pd.DataFrame({**{col: out[col] for col in REQUEST_COLUMNS},
                           **{col: frame[col].array for col in views}})
    result[LISTED] = np.asarray(
        spans["deprecated_listed"].to_numpy(zero_copy_only=False), dtype=bool)
    result[ROUTE_ENDED] = (  # the lean pass keeps no route
        np.asarray(spans["route_ended"].to_numpy(zero_copy_only=False), dtype=bool)
        if "route_ended" in spans.column_names else np.zeros(n, dtype=bool))
    result[FIRST_TIME] = frame["first_time"].array
    result[STARTED] = np.asarray(spans["started"].to_numpy(zero_copy_only=False), dtype=bool)
    result[INNER] = np.asarray(spans["inner"].to_numpy(zero_copy_only=False), dtype=bool)
    result[OUTER] = np.asarray(spans["outer"].to_numpy(zero_copy_only=False), dtype=bool)
    result[PART] = part
    # Each row's place in its part: the part's first row is at 0.
    result[POS] = np.arange(n, dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    # DuckDB hashed the key while aggregating; hashing Arrow strings in pandas cost more.
    result[KEY] = spans["span_key"].to_numpy()
    return result


def _shuffle_text(typ: pa.DataType) -> Any:
    return SHUFFLE_STRING if typ in (pa.string(), pa.large_string()) else None


def _arrow_string(typ: pa.DataType) -> Any:
    return ARROW_STRING if typ == pa.string() else _shuffle_text(typ)


def partial_requests(requests: pd.DataFrame, part: int) -> pd.DataFrame:
    """Tag `build_requests` output of partition `part` for shuffling and combining.

    Adds the partition number, the row's position (first-seen order inside the
    partition) and a 64-bit hash of the span key to route it by. Categorical and
    text columns become `SHUFFLE_STRING` and the file columns their integer codes,
    so every partition has the same dtypes whatever values it saw.
    """
    out = requests.copy()
    for col in out.columns:
        dtype = out[col].dtype
        if col in FILE_COLUMNS:
            out[col] = np.asarray(out[col].cat.codes.to_numpy(), dtype=np.int32)
        elif isinstance(dtype, pd.CategoricalDtype) or is_text(dtype):
            out[col] = out[col].astype(SHUFFLE_STRING)
    for col in LINE_COLUMNS:
        out[col] = out[col] + (part << LINE_BITS)
    # A whole input's requests: no other partial of a span to prefer a list over.
    out[LISTED] = np.zeros(len(out), dtype=bool)
    out[ROUTE_ENDED] = np.zeros(len(out), dtype=bool)
    out[FIRST_TIME] = out["start"]
    out[STARTED] = np.zeros(len(out), dtype=bool)
    out[INNER] = np.zeros(len(out), dtype=bool)  # nested in the requests already
    out[OUTER] = np.zeros(len(out), dtype=bool)
    out[PART] = np.full(len(out), part, dtype=np.int64)
    out[POS] = np.arange(len(out), dtype=np.int64)
    out[KEY] = pd.util.hash_pandas_object(out[KEYS], index=False).to_numpy()
    return out


def _merge(parts: pd.DataFrame) -> pd.DataFrame:
    """One row per span from several partials of it (in `_in_time_order`).

    Grouped by the key hashed from the ids spelt one way (`span_sql.spans_select`), not
    by the ids as logged: a span whose file rotated between a line spelling its id upper
    case and one spelling it lower case is one span; it keeps its earliest spelling."""
    codes = np.asarray(parts.groupby(KEY, sort=False).ngroup().to_numpy(), dtype=np.int64)
    n = int(np.max(codes)) + 1
    every = np.ones(len(parts), dtype=bool)
    first, last = group_rows(codes, every, n), group_rows(codes, every, n, last=True)
    out: dict[str, Any] = {}
    for col in (*KEYS, "file", "first_line", PART, POS):
        out[col] = take_rows(parts[col], first)
    notna = {col: np.asarray(parts[col].notna().to_numpy(), dtype=bool) for col in parts}
    for col in (*_FIRST, *(c for c in VIEW_COLUMNS if c in parts)):
        out[col] = take_rows(parts[col], group_rows(codes, notna[col], n))
    # The route of the partial holding the span's end line, when one does.
    route_ended = np.asarray(parts[ROUTE_ENDED].to_numpy(), dtype=bool)
    at_end = group_rows(codes, notna["route"] & route_ended, n)
    out["route"] = take_rows(parts["route"], np.where(
        at_end >= 0, at_end, group_rows(codes, notna["route"], n)))
    out[ROUTE_ENDED] = at_end >= 0
    out["request_id"] = take_rows(parts["request_id"],
                                  latest_rows(codes, notna["request_id"], parts["end"], n))
    # A line and the file it is in come from the same partial.
    for col in ("last_line", "last_file"):
        out[col] = take_rows(parts[col], last)
    listed = np.asarray(parts[LISTED].to_numpy(), dtype=bool)
    for value, line in _PAIRS:
        rows = group_rows(codes, notna[line], n)
        if value == "deprecated":
            own_list = group_rows(codes, notna[line] & listed, n)
            rows = np.where(own_list >= 0, own_list, rows)
        out[value], out[line] = take_rows(parts[value], rows), take_rows(parts[line], rows)
        out[LINE_FILES[line]] = _take_codes(parts[LINE_FILES[line]], rows)
    out[LISTED] = group_rows(codes, listed, n) >= 0
    by = pd.DataFrame({"c": codes, "start": parts["start"].array, "end": parts["end"].array,
                       "first": parts[FIRST_TIME].array, "lines": parts["lines"].to_numpy()})
    agg = by.groupby("c", sort=True).agg(start=("start", "min"), end=("end", "max"),
                                         first=("first", "min"), lines=("lines", "sum"))
    out[FIRST_TIME] = agg["first"].array
    out[STARTED] = opened = group_rows(codes, parts[STARTED].to_numpy(dtype=bool), n) >= 0
    out["start"] = agg["start"].where(~opened, agg["first"]).array
    out[INNER] = group_rows(codes, parts[INNER].to_numpy(dtype=bool), n) >= 0
    out[OUTER] = group_rows(codes, parts[OUTER].to_numpy(dtype=bool), n) >= 0
    out["end"] = agg["end"].array
    out["lines"] = agg["lines"].to_numpy()
    closing = np.asarray(parts["closing"].fillna(False).to_numpy(), dtype=bool)
    out["closing"] = group_rows(codes, closing, n) >= 0
    is_worker = np.asarray((parts["side"] == WORKER).fillna(False).to_numpy(), dtype=bool)
    side = np.where(group_rows(codes, is_worker, n) >= 0, WORKER, "frontend")
    out["side"] = pd.Series(side, dtype=ARROW_STRING).array
    return pd.DataFrame({col: out[col] for col in parts.columns if col != KEY})


def _take_codes(codes: pd.Series, rows: np.ndarray) -> np.ndarray:
    """File codes at `rows`; -1 (no file) where a row is -1 (no line)."""
    values = np.asarray(codes.to_numpy(), dtype=np.int32)
    return np.where(rows >= 0, values[np.maximum(rows, 0)], -1).astype(np.int32)


def combine_requests(parts: pd.DataFrame) -> pd.DataFrame:
    """Combine partials of any set of spans (all partials of each span present).

    Spans seen in one partition only — nearly all — pass through untouched; only the
    ones cut by a partition boundary (or logged in several files) are merged.
    """
    parts = _arrow_text(parts)
    if parts.empty:
        return parts.drop(columns=KEY)
    parts = in_part_order(parts)
    split = parts[KEY].duplicated(keep=False).to_numpy()
    if not split.any():  # the usual case: no span cut by a part boundary or a rotation
        return parts.drop(columns=KEY)
    whole = parts.loc[~split].drop(columns=KEY)
    merged = _merge(_in_time_order(parts.loc[split].reset_index(drop=True)))
    combined = pd.concat([whole, merged.astype(whole.dtypes.to_dict())], ignore_index=True)
    return combined


def in_part_order(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows by (part, position in it), stably. The local engine's parts arrive in that
    order already, and a sort would copy every column of ~10⁵ rows to change nothing."""
    part = frame[PART].to_numpy()
    pos = frame[POS].to_numpy()
    step = np.diff(part)
    if (step >= 0).all() and (np.diff(pos)[step == 0] > 0).all():
        return frame.reset_index(drop=True)
    return frame.sort_values([PART, POS], kind="stable", ignore_index=True)


def _in_time_order(parts: pd.DataFrame) -> pd.DataFrame:
    """Each span's partials file by file, earliest first, and in part order within a file.

    A span's lines are in several files when its log rotated while it was in flight
    (or was copied under another name). The file where the span's first line is earlier
    holds its earlier lines, whatever order the files were given in; files whose first
    lines of the span have the same time keep input order, where the parts of a rotated
    log are oldest first (`reading.rotation`). Within one file lines keep file order,
    not time: a file cut into blocks combines exactly as it is read whole. By the
    lines' own times, not the start: Dynamo's closing line dates a part holding it back
    by its ``latency_ms``, to before the span's first line in another file.
    """
    first_in_file = parts.groupby([KEY, "file"], sort=False, dropna=False)[FIRST_TIME]
    by_time = parts.assign(_first_in_file=first_in_file.transform("min"))
    ordered = by_time.sort_values(["_first_in_file", PART, POS], kind="stable",
                                  na_position="last", ignore_index=True)
    return ordered.drop(columns="_first_in_file")


def _arrow_text(frame: pd.DataFrame) -> pd.DataFrame:
    """Text columns as the one Arrow string dtype `_merge` and the client work with
    (partials arrive as `SHUFFLE_STRING`, or as Python strings from other shuffles)."""
    text = {c: ARROW_STRING for c, t in frame.dtypes.items() if is_text(t) and t != ARROW_STRING}
    return frame.astype(text) if text else frame
