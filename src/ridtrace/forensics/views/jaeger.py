"""Export joined requests as a Jaeger UI "JSON File" (the format its Upload button opens)."""

from __future__ import annotations

import json
from collections import namedtuple
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

import numpy as np
import pandas as pd
import pyarrow as pa

from ridtrace.contract import REQUEST_START, WORKER
from ridtrace.forensics.records.requests import epoch_us
from ridtrace.forensics.rules.skew import apply_offsets, clock_offsets
from ridtrace.forensics.views import jaeger_ids
from ridtrace.forensics.views.file_clocks import line_clocks
from ridtrace.forensics.views.jaeger_epoch import from_1970
from ridtrace.forensics.views.jaeger_logs import (
    SpanLogs,
    failed,
    jaeger_form,
    present,
    process_id,
    tag,
)
from ridtrace.forensics.views.jaeger_names import inherited_routes, operation_name, worker_route
from ridtrace.forensics.views.trace_events import answered_ms
from ridtrace.forensics.views.trace_spellings import one_spelling

_TAGS = ("request_id", "x_request_id", "side", "outcome", "status", "route", "fp_in", "fp_out",
         "deprecated", "worker", "error")
# What a span's row is read for (`jaeger_traces`, `jaeger_names.operation_name`): made
# Python objects for these alone, not for the times, lines and files beside them.
_ROW_FIELDS = (*_TAGS, "trace_id", "span_id", "parent_span_id", "jaeger_trace", "jaeger_span",
               "jaeger_parent", "service", "file", "method", "span_name")

# Jaeger reserves the `error` tag for a boolean flag; the text goes beside it.
_TAG_KEY = {"error": "error.message"}
# The live span's attribute name too, so that one Jaeger search finds a header's users
# in a file as live (`deprecated` is the export's first name, kept for its users).
_TAG_ALSO = {"deprecated": "deprecated_headers"}
# Liveness, readiness and scrape endpoints: thousands of spans that hide the requests.
# `/live` is Dynamo's liveness route; sub-paths such as `/health/ready` are probes too.
# `/debug/inflight` is ridtrace's own registry view, which tooling (the demo) polls.
HEALTH_ROUTES = frozenset(
    {"/health", "/healthz", "/livez", "/readyz", "/ready", "/live", "/ping", "/metrics",
     "/v1/health", "/debug/inflight"}
)
# gRPC's standard health service (Kubernetes' grpc probes and grpc-health-probe call
# Check; load balancers keep a Watch open): a gRPC call's route is its span's name
# (`grpc.health.v1.Health/Check`); lines that log no route, the full method as `path`.
GRPC_HEALTH_SERVICE = ("/grpc.health.v1.Health/", "grpc.health.v1.Health/")


def _is_probe(route: object) -> bool:
    if not isinstance(route, str):
        return False
    route = route.rstrip("/")
    return route in HEALTH_ROUTES or route.startswith(
        ("/health/", "/healthz/", *GRPC_HEALTH_SERVICE)
    )


def _health_probes(requests: pd.DataFrame) -> np.ndarray:
    """Spans of health probes, and the spans under them."""
    route = requests["route"].astype("object")
    probe = route.map(_is_probe)
    probe_ids = set(requests["span_id"][probe.to_numpy(dtype=bool)].astype("object"))
    child = requests["parent_span_id"].astype("object").isin(probe_ids).to_numpy()
    return np.asarray(probe.to_numpy(dtype=bool) | child, dtype=bool)


def untraced(requests: pd.DataFrame, *, health: bool = False) -> int:
    """How many spans `jaeger_traces` leaves out for want of a trace id (Dynamo logs
    none when a span's trace context is missing): the file lacks them, so the export
    says it is incomplete. Health probes, left out anyway, are not counted."""
    if not len(requests):
        return 0
    missing = np.array((requests["trace_id"].isna() & requests["span_id"].notna()).to_numpy())
    if not health:
        missing &= ~_health_probes(requests)
    return int(missing.sum())


def _in_loops(parents: dict[tuple[str, str], tuple[str, str]]) -> set[tuple[str, str]]:
    """The spans on a loop of parent references (each span's chain walked once)."""
    looped: set[tuple[str, str]] = set()
    walked: set[tuple[str, str]] = set()
    for start in parents:
        path: list[tuple[str, str]] = []
        at: dict[tuple[str, str], int] = {}
        node = start
        while node in parents and node not in walked and node not in at:
            at[node] = len(path)
            path.append(node)
            node = parents[node]
        if node in at:
            looped.update(path[at[node]:])
        walked.update(path)
    return looped


NO_ANSWER: Final = ("no answer logged (no request.end, nor Dynamo's http response sent): "
                    "in flight when its process stopped, or lines of it were lost; "
                    "the span runs to its last line")
NO_START: Final = ("no start logged (no request.start, nor a duration on its answer): "
                   "its first lines were rotated away or lost; the span starts at its "
                   "first line read, not where the request began")
NO_END: Final = ("no end logged (no worker.end, nor Dynamo's request completed): "
                 "in flight when its process stopped, or lines of it were lost; "
                 "the span runs to its last line")

_CHUNK = 4096  # rows turned into Python objects at a time


def _rows(frame: pd.DataFrame) -> Iterator[Any]:
    """`frame.itertuples(index=False)`, the same rows, a chunk at a time: itertuples turns
    every column into Python objects first, as much memory as the traces written from
    them. A text column becomes objects in one call per chunk; itertuples took its
    values one at a time from Arrow, as long as the rest of the export."""
    row = namedtuple("Row", frame.columns, rename=True)  # type: ignore[misc]
    for at in range(0, len(frame), _CHUNK):
        chunk = frame.iloc[at:at + _CHUNK]
        columns = [_objects(chunk.iloc[:, k]) for k in range(chunk.shape[1])]
        yield from map(row._make, zip(*columns, strict=True))


def _objects(column: pd.Series) -> Any:
    """The column's values as iterating it gives them (a missing text is its dtype's NA)."""
    dtype = column.dtype
    if isinstance(dtype, pd.StringDtype) or (
        isinstance(dtype, pd.ArrowDtype) and pa.types.is_string(dtype.pyarrow_dtype)
    ):
        missing: Any = dtype.na_value  # pd.NA, or NaN for the "str" dtype
        return column.to_numpy(dtype=object, na_value=missing)
    return column


def _in_start_order(trace: dict[str, Any]) -> dict[str, Any]:
    """The trace with its spans by startTime, as Jaeger's own JSON lists them: a span dated
    back by the duration its answer states (its request.start not in the logs) was sorted
    by its first line's time, after the spans it called. Ties keep their order (stable)."""
    trace["spans"].sort(key=lambda span: span["startTime"])
    return trace


def to_jaeger(
    requests: pd.DataFrame, events: pd.DataFrame | None = None, *, health: bool = False
) -> dict[str, Any]:
    """``{"data": [trace, ...]}``: the whole document `jaeger_traces` streams."""
    data = list(jaeger_traces(requests, events, health=health))
    return {"data": data, "total": 0, "limit": 0, "offset": 0, "errors": None}


# `json.dumps`'s bytes, without its check for a container inside itself: each trace is
# built here from fresh dicts and lists, and the check cost a sixth of the encoding.
_ENCODE = json.JSONEncoder(check_circular=False).encode


def write_jaeger(traces: Iterable[dict[str, Any]], write: Callable[[str], object]) -> int:
    """Write the document `to_jaeger` returns (the same bytes as ``json.dumps`` of it),
    one trace at a time: a big input's document never exists whole. Returns the traces."""
    write('{"data": [')
    count = 0
    for trace in traces:
        write((", " if count else "") + _ENCODE(trace))
        count += 1
    write('], "total": 0, "limit": 0, "offset": 0, "errors": null}')
    return count


def jaeger_traces(
    requests: pd.DataFrame, events: pd.DataFrame | None = None, *, health: bool = False
) -> Iterator[dict[str, Any]]:
    """Jaeger traces, one per trace_id, worker spans CHILD_OF their caller, built one at a
    time in the order of their first span.

    Times are microseconds since the epoch, as Jaeger's JSON model wants; every span
    carries ``request_id`` and (when the client sent one) ``x_request_id`` tags. Health
    probes are left out unless `health`. A span whose parent is not in the file (the
    caller's own tracer, or logs not given) keeps the parent's id as a tag, not as a
    reference Jaeger could not resolve.

    Worker files' clocks are corrected first (`clock_offsets`, as `ridtrace trace` shows
    them): Jaeger's UI adjusts no clock of an uploaded file, so a worker running behind
    would start its spans before its caller did.
    """
    # Estimated on the ids spelt one way, as analyze and trace estimate it: a worker
    # that logged its caller's id in another case, or without its leading zeros, was
    # linked in the file yet left on its own clock, outside its caller.
    offsets = clock_offsets(one_spelling(requests)) if len(requests) else {}
    # A copy of an offset file (one log collected twice) on its clock: spans and lines.
    clocks = line_clocks(events, offsets) if events is not None else offsets
    requests = apply_offsets(requests, clocks)
    keep = np.array((requests["trace_id"].notna() & requests["span_id"].notna()).to_numpy())
    if not health and len(requests):
        keep &= ~_health_probes(requests)
    # In time order, not the order the files were named in: the same logs give the same
    # file (traces, spans and process ids alike), and traces list as Jaeger's search does.
    # Each trace's spans together, by start, so a trace is written once it is complete.
    req = requests[keep]
    # Spans are grouped and linked by the ids' Jaeger form, not as logged: two spellings
    # of one id (case, leading zeros) are one trace, and one span, to Jaeger.
    parent_ids = req["parent_span_id"]
    has_parent = parent_ids.notna().to_numpy()
    parent_form = np.full(len(req), None, dtype=object)
    parent_form[has_parent] = jaeger_form(parent_ids[has_parent], trace=False)
    req = req.assign(jaeger_trace=jaeger_form(req["trace_id"], trace=True),
                     jaeger_span=jaeger_form(req["span_id"], trace=False),
                     jaeger_parent=parent_form)
    req = req.assign(_first=req.groupby("jaeger_trace", sort=False)["start"].transform("min"))
    req = req.sort_values(["_first", "jaeger_trace", "start", "jaeger_span"], kind="stable")
    routes = dict(zip(zip(req["jaeger_trace"], req["jaeger_span"], strict=True),
                      req["route"].astype("object"), strict=True))
    exported = set(routes)
    # Frontend spans, whose children may be steps (Dynamo's `generate` under its
    # `http-request`): the request answers on the span above, never on the step.
    frontends = {(t, s) for t, s, side in zip(req["jaeger_trace"], req["jaeger_span"],
                                              req["side"], strict=True) if side != WORKER}
    parents = {
        (t, s): (t, p)
        for t, s, p in zip(req["jaeger_trace"], req["jaeger_span"], req["jaeger_parent"],
                           strict=True)
        if p is not None and (t, p) in exported
    }
    looped = _in_loops(parents)
    routes.update(inherited_routes(req, parents, routes, looped))
    starts = epoch_us(req["start"]) if len(req) else np.zeros(0, dtype=np.int64)
    ends = epoch_us(req["end"]) if len(req) else np.zeros(0, dtype=np.int64)
    logs = SpanLogs(events, clocks)
    trace: dict[str, Any] | None = None
    fields = [c for c in _ROW_FIELDS if c in req.columns]
    for r, start, end in zip(_rows(req[fields]), starts, ends, strict=True):
        trace_id = str(r.trace_id)
        jaeger_trace, jaeger_span = r.jaeger_trace, r.jaeger_span
        if trace is None or jaeger_trace != trace["traceID"]:
            if trace is not None:
                yield _in_start_order(trace)
            trace = {"traceID": jaeger_trace, "spans": [], "processes": {}}
        # Jaeger's process needs a name: an empty service (configure_logging(service=""))
        # is named by its side, as a missing one is.
        named = present(r.service) and str(r.service).strip()
        pid = process_id(trace, str(r.service) if named else str(r.side), str(r.file))
        refs = []
        caller_route = None
        unlinked_parent = False
        if present(r.parent_span_id):
            parent = r.jaeger_parent
            # No reference closes a loop (a span its own parent, or two each other's):
            # Jaeger's trace tree would loop on it.
            if (jaeger_trace, parent) in exported and (
                (jaeger_trace, jaeger_span) not in looped
            ):
                refs.append({"refType": "CHILD_OF", "traceID": jaeger_trace, "spanID": parent})
                caller_route = routes[(jaeger_trace, parent)]
            else:
                unlinked_parent = True
        values = {k: getattr(r, k) for k in _TAGS}
        if present(values["route"]) and r.side == WORKER:
            # A worker's own endpoint (a refusal's `path`) is no route of the request's:
            # tagged, as named, with its caller's (`operation_name`).
            values["route"] = worker_route(r, caller_route)
        tags = [tag(_TAG_KEY.get(k, k), v) for k, v in values.items() if present(v)]
        tags += [tag(_TAG_ALSO[k], values[k]) for k in _TAG_ALSO if present(values[k])]
        tags += jaeger_ids.logged_id_tags(trace_id, str(r.span_id))
        if unlinked_parent:
            tags.append(tag("parent_span_id", str(r.parent_span_id)))
        if failed(r.outcome, r.status):
            tags.append(tag("error", True))
        # The span exported live ended with its answer: a 500 sent at 20 ms whose pump
        # logged an Unlinked line at 80 ms was a 20 ms span in Jaeger, not 80 ms.
        answered = logs.answered_at(jaeger_trace, jaeger_span)
        if answered is not None and start <= answered < end:
            end = answered
        span_logs = logs.get(jaeger_trace, jaeger_span)
        # A span exported live ends or is never sent; one built from logs whose caller
        # was never answered (its process killed mid-request, its last lines lost) ran
        # to its last line, a 0 µs span when request.start is its only one: the request
        # an incident is about looked like an instant success. Jaeger shows `warnings`.
        # A worker span is judged by its own start and end lines: one killed mid-stream
        # (worker.start its only line) was a 0 µs span with no outcome under a caller
        # whose stream failed. Dynamo's workers at INFO level log neither line.
        # A step logs no request.start: a frontend called by another (a gateway's
        # inner service) is a request of its own, judged as one.
        step = (bool(refs) and (jaeger_trace, refs[0]["spanID"]) in frontends
                and not any(log["fields"][0]["value"] == REQUEST_START for log in span_logs))
        unanswered = answered is None and span_logs and r.side != WORKER and not step
        unended = r.side == WORKER and logs.began_work_unended(jaeger_trace, jaeger_span)
        warning = [NO_ANSWER] if unanswered else [NO_END] if unended else None
        if r.side != WORKER and not step and answered is not None:
            # Its request.start rotated away: a 0 µs span ending at its request.end, an
            # instant answer. The duration its answer states dates it back.
            unlogged, stated = logs.stated_start(jaeger_trace, jaeger_span, int(start))
            start = stated if stated is not None else start
            warning = [NO_START] if unlogged and stated is None else warning
            # Its answer ended where the duration it states says, before the background
            # tasks its response ran (request.end comes after them), as the span
            # exported live did: a 5 ms answer with a 1 s task was a 1 s span.
            end = start + round(answered_ms((end - start) / 1000,
                                            logs.stated_ms(jaeger_trace, jaeger_span)) * 1000)
        trace["spans"].append(from_1970(
            {
                "traceID": trace["traceID"],
                "spanID": jaeger_span,
                "operationName": operation_name(r, caller_route),
                "references": refs,
                "startTime": int(start),
                "duration": int(end - start),
                "tags": tags,
                "logs": span_logs,
                "processID": pid,
                "warnings": warning,
            }
        ))
    if trace is not None:
        yield _in_start_order(trace)
