"""Map ridtrace/1 and Dynamo JSONL lines onto one event vocabulary (Arrow in, Arrow out).

Dynamo has no ``event`` key; its lifecycle is spelled in messages and span names, so
those are translated to the ridtrace names (``request.start``, ``worker.end``, …)
and every rule downstream deals with one format only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ridtrace.forensics.reading.reader import ReadStats
from ridtrace.forensics.reading.schema import (
    EVENT_CATEGORY_COLUMNS,
    EVENT_COLUMNS,
    FRONTEND,
    RIDTRACE_SCHEMA,
    WORKER,
)

_DYN_WORKER_SPANS = ["handle_payload"]
_DYN_FRONTEND_SPANS = ["http-request", "generate"]
# "x-dynamo-request-id header is deprecated (DEP #7812); ..." in older Dynamo releases.
_DEPRECATED_RE = r"^(?P<header>[A-Za-z0-9-]+) header is deprecated"
_STR = pa.string()


def _null(n: int) -> pa.Array:
    return pa.nulls(n, _STR)


def _constant(n: int, value: str) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), [value])


def _where(mask: Any, a: Any, b: Any) -> Any:
    return pc.if_else(pc.fill_null(mask, False), a, b)


def _ridtrace(t: pa.Table) -> dict[str, Any]:
    event = t["event"]
    is_worker_event = pc.starts_with(event, "worker.")
    header = _where(pc.equal(event, "deprecated_header"), t["header"], _null(t.num_rows))
    return {
        "format": _constant(t.num_rows, "ridtrace"),
        "event": event,
        "side": _where(is_worker_event, pa.scalar(WORKER), _null(t.num_rows)),
        "status": t["status"],
        "outcome": t["outcome"],
        "route": pc.coalesce(t["route"], t["path"]),
        "service": t["service"],
        "worker": t["worker"],
        "parent_span_id": t["parent_span_id"],
        "fp_in": t["fp_in"],
        "fp_out": t["fp_out"],
        "deprecated": pc.coalesce(t["deprecated_headers"], header),
        "chunk_request_id": t["chunk_request_id"],
    }


def _dynamo(t: pa.Table) -> dict[str, Any]:
    n = t.num_rows
    msg = t["message"]
    span = t["span_name"]
    worker = pc.is_in(span, pa.array(_DYN_WORKER_SPANS))
    frontend = pc.is_in(span, pa.array(_DYN_FRONTEND_SPANS))
    received = pc.equal(msg, "request received")
    completed = pc.equal(msg, "request completed")
    sent = pc.equal(msg, "http response sent")
    err = pc.fill_null(t["error"], "")
    unlinked = pc.or_(
        pc.match_substring(err, "Unlinked response"), pc.match_substring(err, "Unlinked request")
    )
    old_header = pc.struct_field(pc.extract_regex(pc.fill_null(msg, ""), _DEPRECATED_RE), [0])
    old_header = _where(pc.equal(old_header, ""), _null(n), old_header)
    deprecated = pc.coalesce(t["header"], old_header)
    event = _null(n)
    for cond, name in (
        (pc.and_(received, worker), "worker.start"),
        (pc.and_(received, frontend), "request.start"),
        (pc.and_(completed, worker), "worker.end"),
        (pc.and_(completed, frontend), "request.end"),
        (sent, "response.sent"),
        (pc.is_valid(deprecated), "deprecated_header"),
        (unlinked, "response.unlinked"),
        (pc.equal(msg, "SPAN_CLOSED"), "span.closed"),
    ):
        event = _where(cond, pa.scalar(name), event)
    status = t["status"]
    # Dynamo's metrics line says "success"; the HTTP code is on "http response sent".
    ok = pc.equal(status, "success")
    outcome = _where(pc.and_(completed, frontend), _where(ok, pa.scalar("ok"), status), _null(n))
    outcome = _where(pc.equal(msg, "engine generate call failed"), pa.scalar("error"), outcome)
    side = _where(worker, pa.scalar(WORKER), _where(frontend, pa.scalar(FRONTEND), _null(n)))
    service = _where(worker, pa.scalar("dynamo-worker"), pa.scalar("dynamo-frontend"))
    return {
        "format": _constant(n, "dynamo"),
        "event": event,
        "side": side,
        "status": _where(sent, status, _null(n)),
        "outcome": outcome,
        "route": t["uri"],
        "service": service,
        "worker": _null(n),
        "parent_span_id": t["parent_id"],
        "fp_in": _null(n),
        "fp_out": _null(n),
        "deprecated": _where(pc.equal(event, "deprecated_header"), deprecated, _null(n)),
        "chunk_request_id": _null(n),
    }


def _combine(is_rt: Any, rt: dict[str, Any], dyn: dict[str, Any]) -> dict[str, Any]:
    def plain(arr: Any) -> Any:
        return arr.cast(_STR) if pa.types.is_dictionary(arr.type) else arr

    return {key: _where(is_rt, plain(rt[key]), plain(dyn[key])) for key in rt}


def normalize(
    raw: pa.Table, lines: np.ndarray, file_id: int, stats: ReadStats, name: str
) -> pa.Table:
    """Normalise one parsed piece of a file; invalid lines are counted and dropped."""
    is_rt = pc.fill_null(pc.equal(raw["schema"], RIDTRACE_SCHEMA), False)
    is_dyn = pc.and_(pc.is_null(raw["schema"]), pc.is_valid(raw["target"]))
    has_time = pc.is_valid(raw["time"])
    valid = pc.and_(pc.or_(is_rt, is_dyn), has_time)
    n_valid = pc.sum(valid).as_py() or 0
    if n_valid < raw.num_rows:
        bad = np.flatnonzero(~valid.to_numpy(zero_copy_only=False))
        no_time = ~has_time.to_numpy(zero_copy_only=False)
        for i in bad:
            stats.bad(name, int(lines[i]), "missing time" if no_time[i] else "unknown format")
        raw = raw.filter(valid)
        lines = lines[np.asarray(valid.to_numpy(zero_copy_only=False), dtype=bool)]
        is_rt = is_rt.filter(valid)
    n = raw.num_rows
    any_rt = bool(pc.any(is_rt).as_py()) if n else False
    all_rt = bool(pc.all(is_rt).as_py()) if n else True
    if all_rt:
        cols = _ridtrace(raw)
    elif not any_rt:
        cols = _dynamo(raw)
    else:
        cols = _combine(is_rt, _ridtrace(raw), _dynamo(raw))
    level = raw["level"]
    cols.update(
        file=pa.array(np.full(n, file_id, dtype=np.int32)),
        line=pa.array(lines, pa.int64()),
        time=raw["time"],
        level=_where(pc.equal(level, "WARNING"), pa.scalar("WARN"), level),
        message=raw["message"],
        request_id=raw["request_id"],
        x_request_id=raw["x_request_id"],
        trace_id=raw["trace_id"],
        span_id=raw["span_id"],
        method=raw["method"],
        client=raw["client"],
        error=raw["error"],
    )
    arrays = []
    for col in EVENT_COLUMNS:
        arr = cols[col]
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if col in EVENT_CATEGORY_COLUMNS and not pa.types.is_dictionary(arr.type):
            arr = arr.cast(_STR).dictionary_encode()
        arrays.append(arr)
    return pa.Table.from_arrays(arrays, names=list(EVENT_COLUMNS))
