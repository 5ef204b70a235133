"""Export joined requests as a Jaeger UI "JSON File" (the format its Upload button opens)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ridtrace.contract import WORKER
from ridtrace.forensics.records.requests import epoch_us
from ridtrace.forensics.rules.skew import correct_skew

_TAGS = ("request_id", "x_request_id", "side", "outcome", "status", "route", "fp_in", "fp_out",
         "deprecated", "worker", "error")

# Jaeger reserves the `error` tag for a boolean flag; the text goes beside it.
_TAG_KEY = {"error": "error.message"}
# Liveness, readiness and scrape endpoints: thousands of spans that hide the requests.
# `/live` is Dynamo's liveness route; sub-paths such as `/health/ready` are probes too.
HEALTH_ROUTES = frozenset(
    {"/health", "/healthz", "/livez", "/readyz", "/ready", "/live", "/ping", "/metrics",
     "/v1/health"}
)


def _is_probe(route: object) -> bool:
    if not isinstance(route, str):
        return False
    route = route.rstrip("/")
    return route in HEALTH_ROUTES or route.startswith(("/health/", "/healthz/"))


def _health_probes(requests: pd.DataFrame) -> np.ndarray:
    """Spans of health probes, and the spans under them."""
    route = requests["route"].astype("object")
    probe = route.map(_is_probe)
    probe_ids = set(requests["span_id"][probe.to_numpy(dtype=bool)].astype("object"))
    child = requests["parent_span_id"].astype("object").isin(probe_ids).to_numpy()
    return np.asarray(probe.to_numpy(dtype=bool) | child, dtype=bool)


# Numbers in Jaeger's and OpenTelemetry's model (an HTTP status is an integer
# attribute): as strings, a tool reading the file compares "500" with "60" as text.
_INT_TAGS = frozenset({"status"})


def _tag(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "type": "bool", "value": value}
    text = str(value)
    if key in _INT_TAGS and text.isascii() and text.isdigit() and len(text) <= 18:  # int64
        return {"key": key, "type": "int64", "value": int(text)}
    return {"key": key, "type": "string", "value": text}


def _present(value: Any) -> bool:
    return value is not None and value is not pd.NA and value == value


def _event_logs(
    events: pd.DataFrame | None, offsets: dict[str, int]
) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Lifecycle lines per (trace, span) as Jaeger span logs (only lines with an
    ``event``): a span id says which span only within its trace, as requests are keyed.
    Each line is moved by its file's clock offset (µs), as its span is."""
    if events is None or events.empty:
        return {}
    rows = events[events["event"].notna().to_numpy() & events["span_id"].notna().to_numpy()]
    us = epoch_us(rows["time"])
    if offsets and len(rows):
        us = us + rows["file"].astype(str).map(offsets).fillna(0).to_numpy(dtype=np.int64)
    logs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for trace, span, t, event, msg in zip(
        rows["trace_id"].astype("object"), rows["span_id"].astype("object"), us,
        rows["event"].astype("object"), rows["message"].astype("object"), strict=True,
    ):
        fields = [_tag("event", event)]
        if _present(msg):
            fields.append(_tag("message", msg))
        logs.setdefault((str(trace), str(span)), []).append(
            {"timestamp": int(t), "fields": fields}
        )
    for lines in logs.values():
        lines.sort(key=lambda line: int(line["timestamp"]))
    return logs


def _operation(r: Any, caller_route: Any = None) -> str:
    if r.side == WORKER:
        # ridtrace's workers log no route (the frontend writes the request lifecycle),
        # so "worker request" was every worker span's name: the caller's route says
        # which API the work was for, and Jaeger's operation list can tell them apart.
        if _present(r.route):
            return f"worker {r.route}"
        return f"worker {caller_route}" if _present(caller_route) else "worker request"
    route = r.route if _present(r.route) else "request"
    method = f"{r.method} " if _present(r.method) else ""
    return f"{method}{route}"


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


def to_jaeger(
    requests: pd.DataFrame, events: pd.DataFrame | None = None, *, health: bool = False
) -> dict[str, Any]:
    """``{"data": [trace, ...]}``: one trace per trace_id, worker spans CHILD_OF their caller.

    Times are microseconds since the epoch, as Jaeger's JSON model wants; every span
    carries ``request_id`` and (when the client sent one) ``x_request_id`` tags. Health
    probes are left out unless `health`. A span whose parent is not in the file (the
    caller's own tracer, or logs not given) keeps the parent's id as a tag, not as a
    reference Jaeger could not resolve.

    Worker files' clocks are corrected first (`correct_skew`, as `ridtrace trace` shows
    them): Jaeger's UI adjusts no clock of an uploaded file, so a worker running behind
    would start its spans before its caller did.
    """
    if len(requests):
        requests, offsets = correct_skew(requests)
    else:
        offsets = {}
    keep = np.array((requests["trace_id"].notna() & requests["span_id"].notna()).to_numpy())
    if not health and len(requests):
        keep &= ~_health_probes(requests)
    # In time order, not the order the files were named in: the same logs give the same
    # file (traces, spans and process ids alike), and traces list as Jaeger's search does.
    req = requests[keep].sort_values(["start", "trace_id", "span_id"], kind="stable")
    routes = dict(zip(zip(req["trace_id"].astype("object"), req["span_id"].astype("object"),
                          strict=True), req["route"].astype("object"), strict=True))
    exported = set(routes)
    parents = {
        (str(t), str(s)): (str(t), str(p))
        for t, s, p in zip(req["trace_id"].astype("object"), req["span_id"].astype("object"),
                           req["parent_span_id"].astype("object"), strict=True)
        if _present(p) and (t, p) in exported
    }
    looped = _in_loops(parents)
    starts = epoch_us(req["start"]) if len(req) else np.zeros(0, dtype=np.int64)
    ends = epoch_us(req["end"]) if len(req) else np.zeros(0, dtype=np.int64)
    logs = _event_logs(events, offsets)
    traces: dict[str, dict[str, Any]] = {}
    for r, start, end in zip(req.itertuples(index=False), starts, ends, strict=True):
        trace_id = str(r.trace_id)
        trace = traces.setdefault(trace_id, {"traceID": trace_id, "spans": [], "processes": {}})
        service = str(r.service) if _present(r.service) else str(r.side)
        procs: dict[str, Any] = trace["processes"]
        pid = next((k for k, v in procs.items() if v["serviceName"] == service), None)
        if pid is None:
            pid = f"p{len(procs) + 1}"
            procs[pid] = {"serviceName": service, "tags": []}
        refs = []
        caller_route = None
        tags = [_tag(_TAG_KEY.get(k, k), getattr(r, k)) for k in _TAGS if _present(getattr(r, k))]
        if _present(r.parent_span_id):
            parent = str(r.parent_span_id)
            # No reference closes a loop (a span its own parent, or two each other's):
            # Jaeger's trace tree would loop on it.
            if (trace_id, parent) in exported and (trace_id, str(r.span_id)) not in looped:
                refs.append({"refType": "CHILD_OF", "traceID": trace_id, "spanID": parent})
                caller_route = routes[(trace_id, parent)]
            else:
                tags.append(_tag("parent_span_id", parent))
        if _present(r.outcome) and r.outcome == "error":
            tags.append(_tag("error", True))
        trace["spans"].append(
            {
                "traceID": trace_id,
                "spanID": str(r.span_id),
                "operationName": _operation(r, caller_route),
                "references": refs,
                "startTime": int(start),
                "duration": int(end - start),
                "tags": tags,
                "logs": logs.get((trace_id, str(r.span_id)), []),
                "processID": pid,
                "warnings": None,
            }
        )
    return {"data": list(traces.values()), "total": 0, "limit": 0, "offset": 0, "errors": None}
