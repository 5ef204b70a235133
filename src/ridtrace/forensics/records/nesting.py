"""Dynamo's ``generate`` span logged without ``parent_id``, put inside its ``http-request``.

Dynamo opens ``generate`` inside ``http-request``, but older releases log its lines
without ``parent_id`` (the shared sample's Unlinked failure): taken as a request of its
own, one failed request was two holding its id, a false ``duplicate_in_flight``. Such a
span's parent is the ``http-request`` span of its trace that it started in: one that
started no later (a millisecond's leeway, ``latency_ms``'s unit, for a start dated
back by it) and, once closed, had not ended. With several (callers that shared a
``traceparent``, in flight at once), the one whose ``request_id`` is the span's own;
with none, or several and no such one, which one is unknown and it stays a request of
its own; so does a second one starting in a host that has its first (another caller's,
whose own host is not in the logs). The live rules (`live.window`) judge it the same
way as lines come.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ridtrace.contract import FRONTEND, WORKER
from ridtrace.forensics.records.partials import ARROW_STRING
from ridtrace.forensics.records.requests import epoch_us
from ridtrace.forensics.rules import INNER_START_LEEWAY_US

# A parent id that names no span: empty, or OpenTelemetry's invalid all-zero id.
_NO_SPAN = r"^(0[xX])?0*$"


def nest_inner_spans(columns: dict[str, Any], inner: np.ndarray, outer: np.ndarray) -> Any:
    """``parent_span_id`` with each unparented `inner` span's host (`outer`) filled in."""
    parent = pa.array(columns["parent_span_id"], type=pa.string())
    trace = pa.array(columns["trace_id"], type=pa.string())
    front = _bools(pc.equal(pa.array(columns["side"], type=pa.string()), FRONTEND))
    traced = _bools(trace.is_valid())
    unparented = _bools(parent.is_null()) | _bools(pc.match_substring_regex(parent, _NO_SPAN))
    lonely = np.flatnonzero(inner & front & traced & unparented)
    hosts = np.flatnonzero(outer & front & traced)
    if not len(lonely) or not len(hosts):
        return columns["parent_span_id"]
    start, end = epoch_us(pd.Series(columns["start"])), epoch_us(pd.Series(columns["end"]))
    closing = np.asarray(pd.Series(columns["closing"]).fillna(True).to_numpy(), dtype=bool)
    row, host = _in_one_trace(trace, lonely, hosts)
    within = (start[host] - INNER_START_LEEWAY_US <= start[row]) & (
        ~closing[host] | (start[row] <= end[host]))
    row, host = row[within], host[within]
    # Several hosts (callers that shared a traceparent, in flight at once): the one whose
    # request_id is its own, when one is. Server-minted ids tell callers apart; left a
    # request of its own, a request and its `generate` span were two holding its id.
    same, _, _ = _request_ids_alike(columns, row, host)
    with_same = np.bincount(row, weights=same, minlength=len(parent))[row] > 0
    row, host = row[~with_same | same], host[~with_same | same]
    once = np.bincount(row, minlength=len(parent))[row] == 1
    row, host = row[once], host[once]
    if not len(row):
        return columns["parent_span_id"]
    # A host has one inner span: the first to start in it. Another one starting in it
    # is another caller's (sharing its traceparent, its own host not in the logs).
    first = np.lexsort((row, start[row], host))
    row, host = row[first], host[first]
    keep = np.r_[True, host[1:] != host[:-1]]
    row, host = row[keep], host[keep]
    return _parented(columns, parent, row, host)


def host_orphan_workers(columns: dict[str, Any], outer: np.ndarray) -> Any:
    """``parent_span_id`` with each worker span whose parent is no span in the logs given
    its trace's ``http-request`` span (`outer`) as parent.

    Dynamo's worker names the frontend's route-less ``generate`` span as its parent, and
    that span logs no line of its own when it succeeds with span events off (Dynamo's
    default): the worker span was a request of its own ("no caller in logs"), every
    request counted twice, and no worker clock was ever corrected by its caller. The
    trace's one ``http-request`` span, or among several (callers that shared a
    ``traceparent``) the one with the worker's ``request_id``, is the caller; with none
    such, the worker stays a request of its own.
    """
    parent = pa.array(columns["parent_span_id"], type=pa.string())
    trace = pa.array(columns["trace_id"], type=pa.string())
    side = pa.array(columns["side"], type=pa.string())
    hosts = np.flatnonzero(outer & _bools(pc.equal(side, FRONTEND)) & _bools(trace.is_valid()))
    workers = np.flatnonzero(_bools(pc.equal(side, WORKER)) & _bools(parent.is_valid()))
    if not len(hosts) or not len(workers):
        return columns["parent_span_id"]
    # In Arrow, and spelt as logged first: the usual log has every parent logged, and a
    # key per span in Python was a second of a 1M-line read, each span's key in Arrow
    # still 60 ms. Only a parent not found as spelt is looked for by its key.
    span_ids = pa.array(columns["span_id"], type=pa.string())
    orphans = workers[~_bools(pc.is_in(parent.take(pa.array(workers)), value_set=span_ids))]
    if len(orphans):
        wanted = _id_key(parent.take(pa.array(orphans)))
        orphans = orphans[~_bools(pc.is_in(wanted, value_set=_id_key(span_ids)))]
    if not len(orphans):
        return columns["parent_span_id"]
    row, host = _in_one_trace(trace, orphans, hosts)
    same, row_rid, host_rid = _request_ids_alike(columns, row, host)
    hosts_of = np.bincount(row, minlength=len(parent))[row]
    same_of = np.bincount(row, weights=same, minlength=len(parent))[row]
    chosen = ((hosts_of == 1) & (same | pd.isna(row_rid) | pd.isna(host_rid))) | (
        (hosts_of > 1) & same & (same_of == 1))
    row, host = row[chosen], host[chosen]
    if not len(row):
        return columns["parent_span_id"]
    return _parented(columns, parent, row, host)


def _in_one_trace(
    trace: pa.Array, rows: np.ndarray, hosts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Every (row, host) pair of `rows` and `hosts` in one trace, its id spelt either way."""
    pairs = pd.DataFrame({"row": rows, "key": _trace_key(trace.take(pa.array(rows)))}).merge(
        pd.DataFrame({"host": hosts, "key": _trace_key(trace.take(pa.array(hosts)))}), on="key")
    return pairs["row"].to_numpy(), pairs["host"].to_numpy()


def _request_ids_alike(
    columns: dict[str, Any], row: np.ndarray, host: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Whether each pair's two spans log one request_id, and the two ids."""
    rid = pa.array(columns["request_id"], type=pa.string())
    row_rid = np.asarray(rid.take(pa.array(row)).to_pylist(), dtype=object)
    host_rid = np.asarray(rid.take(pa.array(host)).to_pylist(), dtype=object)
    return pd.notna(row_rid) & (host_rid == row_rid), row_rid, host_rid


def _parented(columns: dict[str, Any], parent: pa.Array, row: np.ndarray,
              host: np.ndarray) -> Any:
    """``parent_span_id`` with each of `row` given its `host`'s span id."""
    parents = np.asarray(parent.to_pylist(), dtype=object)
    parents[row] = np.asarray(pa.array(columns["span_id"], type=pa.string())
                              .take(pa.array(host)).to_pylist(), dtype=object)
    return pd.array(pa.array(parents.tolist(), type=pa.string()), dtype=ARROW_STRING)


def _id_key(ids: pa.Array) -> pa.Array:
    """Ids as one key whatever their spelling (case, ``0x``, leading zeros), in Arrow."""
    bare = pc.replace_substring_regex(pc.utf8_lower(ids), r"^0x", "")
    return pc.utf8_ltrim(bare, "0")


def _trace_key(trace: pa.Array) -> np.ndarray:
    """Trace ids as one key whatever their spelling (`_id_key`): the views' frames hold
    them as logged."""
    return np.asarray(_id_key(trace).to_pylist(), dtype=object)


def _bools(values: Any) -> np.ndarray:
    return np.asarray(pc.fill_null(values, False).to_numpy(zero_copy_only=False), dtype=bool)
