"""The operation each span of `ridtrace export jaeger` is named (`views.jaeger`)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ridtrace.contract import WORKER
from ridtrace.forensics.rules import MAX_CALLER_DEPTH
from ridtrace.forensics.views.jaeger_logs import present

__all__ = ["inherited_routes", "operation_name", "worker_route"]


def inherited_routes(req: pd.DataFrame, parents: dict[Any, Any], routes: dict[Any, Any],
                     looped: set[Any]) -> dict[Any, Any]:
    """The route of the request each span without one works for, through the spans above
    it that log none (a decode worker's prefill worker; Dynamo's frontend `generate`
    span, between its worker's `handle_payload` and its `http-request`): the workers
    below such a span are named after it."""
    bare = {(t, s) for t, s, route in zip(req["jaeger_trace"], req["jaeger_span"],
                                          req["route"], strict=True) if not present(route)}
    out = {}
    for key in bare - looped:
        up = parents.get(key)
        for _ in range(MAX_CALLER_DEPTH):
            if up not in bare or up in looped:
                break
            up = parents.get(up)
        if up is not None and up not in bare and present(routes.get(up)):
            out[key] = routes[up]
    return out


def worker_route(r: Any, caller_route: Any) -> Any:
    """The route worker span `r` worked for: its caller's (`caller_route`, as
    `operation_name` takes it) when known, else the one it logged (None for a frontend
    span: its own route is its row's)."""
    if r.side != WORKER:
        return None
    return caller_route if present(caller_route) else r.route


def operation_name(r: Any, caller_route: Any = None) -> str:
    """`r`'s operationName (a row of the requests frame); `caller_route`: its parent's
    route, or the one the parent inherited (`inherited_routes`)."""
    if r.side == WORKER:
        # ridtrace's workers log no route (the frontend writes the request lifecycle),
        # so "worker request" was every worker span's name: the caller's route says
        # which API the work was for, and Jaeger's operation list can tell them apart.
        # The caller's first: a worker that refused a request logs its own endpoint
        # (`path: /v1/work`), and its span was "worker /v1/work" under the caller's
        # `POST /v1/chat/completions`. Its own path names it only with no caller read.
        route = worker_route(r, caller_route)
        if present(route):
            return f"worker {route}"
        # Its caller is not in the logs read: a Dynamo worker logs its span's name
        # (`handle_payload`), which says more than "request" (kept when none is logged).
        # Only the full read's frame has `span_name`.
        logged = getattr(r, "span_name", None)
        return f"worker {logged}" if present(logged) else "worker request"
    method = f"{r.method} " if present(r.method) else ""
    if present(r.route):
        return f"{method}{r.route}"
    # A step with no route of its own (Dynamo's `generate` under its `http-request`,
    # where an engine call that failed logs its error) was "request", a name that says
    # nothing: it is named as its service logged it, as that service's own OTLP export
    # names it in Jaeger. Its parent's operation says which route it worked for.
    # A frame of the lean read has no `span_name` column.
    logged = getattr(r, "span_name", None)
    return str(logged) if present(logged) else f"{method}request"
