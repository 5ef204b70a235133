"""What `ridtrace trace` shows: the requests matching an id, each with its spans and events.

One block per caller (a frontend request): its header facts, the fingerprints'
verdict, the error findings it is part of, its spans and its log lines, with times in
milliseconds since the caller started — on one clock, after the worker files' clock
offsets are corrected (`ridtrace.forensics.rules.skew`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ridtrace.contract import FRONTEND, OUTCOME_ERROR, WORKER
from ridtrace.forensics.records.requests import VIEW_COLUMNS, epoch_us
from ridtrace.forensics.rules import CALLER_JUMP_ROUNDS
from ridtrace.forensics.rules.overlap import ids_held_in_flight
from ridtrace.forensics.rules.skew import apply_offsets, clock_offsets
from ridtrace.forensics.rules.streams import unlinked
from ridtrace.forensics.views.file_clocks import line_clocks
from ridtrace.forensics.views.jaeger_logs import failed
from ridtrace.forensics.views.trace_events import MAX_LINES, attach_events, ms_since
from ridtrace.forensics.views.trace_keys import apart_by_trace
from ridtrace.forensics.views.trace_match import matching_spans
from ridtrace.forensics.views.trace_rank import (
    HELD_END,
    Holders,
    callers_by_id,
    overlapping,
    overlaps_of_spans,
    ranked_owners,
    standing_workers,
)
from ridtrace.forensics.views.trace_rows import (
    CROSSED_STREAM,
    DUPLICATE_IN_FLIGHT,
    ERROR_KINDS,
    UNLINKED,
    RequestBlock,
    SpanBar,
    TraceView,
    logged_id,
)
from ridtrace.forensics.views.trace_spellings import LOGGED_TRACE_ID, spelt_one_way
from ridtrace.forensics.views.trace_starts import unlogged_starts
from ridtrace.forensics.views.trace_workers import worker_names, worker_sides
from ridtrace.forensics.views.verdicts import (
    CROSSED,
    NO_CALLER,
    OutputIndex,
    Verdict,
    text,
)


def _owners(requests: pd.DataFrame) -> pd.Series:
    """The caller span each span belongs to: itself, its frontend parent, or its worker's."""
    span = requests["span_id"].astype(object)
    parent = requests["parent_span_id"].astype(object)
    is_front = (requests["side"] == FRONTEND).to_numpy()
    front_ids = set(span[is_front].dropna())
    # A frontend span under another frontend span (Dynamo's `generate` under its
    # `http-request`) is a step of that caller, not a caller of its own.
    sub = is_front & parent.isin(front_ids).to_numpy()
    top = dict(zip(span[sub], parent[sub], strict=True))
    # A step of a step (newer Dynamo's `client_request` inside `generate`) belongs to
    # the outermost caller, as the rules count it.
    for _ in range(CALLER_JUMP_ROUNDS):
        outer = {step: top.get(up, up) for step, up in top.items()}
        if outer == top:
            break
        top = outer
    owner = span.where(~sub, span.map(top))
    worker_owner = parent.map(top)
    worker_owner = worker_owner.where(worker_owner.notna(), parent)
    owner = owner.where(is_front, worker_owner)
    # A worker span working for another worker span (a Dynamo processor's engine worker,
    # a decode worker's prefill worker) belongs to that one's caller, as the rules say.
    workers = ~is_front & parent.notna().to_numpy()
    # A worker span with no parent (work sent with no trace context) is its own caller;
    # left missing, comparing it below raised (pandas' NA has no truth value).
    owner = owner.where(owner.notna(), span)
    # Climbed by pointer jumping, as the rules climb (`SpanColumns.caller`): a chain
    # deeper than a fixed number of single steps was shown as several callers.
    above = dict(zip(span[workers], owner[workers], strict=False))
    for _ in range(CALLER_JUMP_ROUNDS):
        jumped = {below: above.get(up, up) for below, up in above.items()}
        if jumped == above:
            break
        above = jumped
    up = owner.map(above).where(pd.Series(workers, index=owner.index))
    owner = owner.where(~(up.notna() & (up != owner)), up)
    filled: pd.Series = owner.fillna(span)
    return filled


def build_trace(
    events: pd.DataFrame, requests: pd.DataFrame, ident: str, *, limit: int | None = 10,
    max_lines: int | None = MAX_LINES,
) -> TraceView:
    """The requests matching `ident` (request_id, x_request_id, trace_id or span_id), ready
    to show.

    `requests` is `build_requests(events)` over the whole logs: verdicts and findings
    need every worker's output, not only the matching ones. Blocks come most relevant
    first: crossed callers, then requests in a duplicate_in_flight, then in an unlinked
    finding, then the others, each by time; `limit` None keeps them all. Each lists
    its lifecycle lines and up to `max_lines` of its others (None: all of them).
    """
    # Linked by ids spelt one way, as analyze links them; shown as logged.
    requests, events, spelt = spelt_one_way(requests, events)
    offsets = clock_offsets(requests)
    # Copies of an offset file on its clock, judged on every line read (as export
    # jaeger judges them): their spans here, their lines below.
    clocks = line_clocks(events, offsets)
    requests = apply_offsets(requests, clocks)
    hit = matching_spans(requests, events, ident)
    requests, events, apart = apart_by_trace(requests, events)
    logged = {**spelt, **{key: spelt.get(span, span) for key, span in apart.items()}}
    requests = _held_in_flight(requests)
    owner = _owners(requests)
    roots = set(owner[hit])
    mine = requests[owner.isin(roots).to_numpy()].assign(_owner=owner[owner.isin(roots)])
    is_root = (mine["side"] == FRONTEND).to_numpy() & (mine["span_id"] == mine["_owner"]).to_numpy()
    verdicts = OutputIndex(requests).verdicts(mine[is_root])
    sides = worker_sides(requests)
    is_top = (requests["side"] == FRONTEND).to_numpy() & (owner == requests["span_id"]).to_numpy()
    held = requests["request_id"].isin(mine["request_id"].dropna()).to_numpy()
    standing = standing_workers(requests[held], owner[held])
    callers = pd.concat([requests[is_top & held], standing])
    # An unlinked finding may name a worker span (output no caller got): its caller's.
    flagged = requests["span_id"].isin(unlinked(requests)["span_id"]).to_numpy()
    lost = set(owner[flagged].astype(str))
    # A crossed stream is the answer the operator came for: it is never cut by --limit
    # while a mere duplicate or unlinked request is shown. Only the shown are built.
    holders = callers_by_id(callers)
    stand_ins = set(standing["span_id"])
    ranked = ranked_owners(mine, is_root, verdicts, holders, lost, stand_ins)
    chosen = ranked if limit is None else ranked[:limit]
    roots_shown = mine[is_root & mine["_owner"].isin(chosen).to_numpy()]
    starts = unlogged_starts(events, clocks, dict(zip(
        roots_shown["span_id"].astype(str), roots_shown["start"], strict=True)))
    shown = [_block(owner, spans, verdicts, sides, (holders, lost, stand_ins), starts)
             for owner, spans in _spans_by_owner(mine, chosen).items()]
    attach_events(shown, events, clocks, max_lines=max_lines)
    return TraceView(
        ident=ident,
        blocks=shown,
        matched=len(ranked),
        offsets_ms={name: us / 1000.0 for name, us in sorted(offsets.items())},
        sides=worker_names(sides),
        logged_span_ids=logged,
        spelt_span_ids=spelt,
    )


_BLOCK_COLUMNS = ("span_id", "side", "start", "end", "outcome", "file", "service",
                  "request_id", "x_request_id", LOGGED_TRACE_ID, "route", "status", "closing",
                  "deprecated", HELD_END)


def _held_in_flight(requests: pd.DataFrame) -> pd.DataFrame:
    """`requests` with each span's id and the end of its hold on it (`HELD_END`, µs) as
    the duplicate_in_flight rule judges them: a caller whose frontend was killed under
    the legacy id policy logged one line under a minted id, and held the client's id its
    workers' lines name while they worked for it. Judged by its one line, two such
    callers were no duplicate here, while `analyze` reported them."""
    front = (requests["side"] == FRONTEND).to_numpy()
    if not (front & requests["outcome"].isna().to_numpy()).any():
        return requests.assign(**{HELD_END: epoch_us(requests["end"])})
    request_id, held_end = ids_held_in_flight(requests)
    return requests.assign(request_id=request_id, **{HELD_END: held_end})


def _spans_by_owner(mine: pd.DataFrame, chosen: list[str]) -> dict[str, list[Any]]:
    """The chosen blocks' spans as rows, each block's by start, blocks in `chosen` order.

    Sorted, timed and turned into rows once for all blocks: per block (a sort, masks,
    two itertuples and a time conversion on a frame of a few rows) it cost about 3 ms,
    which `--limit 0` paid for every matching request.
    """
    owners = mine["_owner"].astype(str)
    wanted = owners.isin(chosen).to_numpy()
    # The span's logged name where the frame has it (a lean read's has not).
    picked = mine.loc[wanted, [*_BLOCK_COLUMNS, *(c for c in VIEW_COLUMNS if c in mine)]]
    start_us, end_us = epoch_us(picked["start"]), epoch_us(picked["end"])
    # By start, a missing start last, ties in log order: as sort_values("start") was.
    key = np.where(picked["start"].isna().to_numpy(), np.iinfo(np.int64).max, start_us)
    order = np.argsort(key, kind="stable")
    picked = picked.iloc[order].assign(
        owner=owners.to_numpy()[wanted][order], start_us=start_us[order], end_us=end_us[order]
    )
    rows: dict[str, list[Any]] = {owner: [] for owner in chosen}
    for row in picked.itertuples(index=False):
        rows[str(row.owner)].append(row)
    return rows


def _side(span: Any, sides: dict[tuple[str, str], str]) -> str:
    if span.side != WORKER:
        return FRONTEND
    return sides.get((str(span.file), text(span.service) or ""), WORKER)


def _block(
    root_id: str,
    spans: list[Any],
    verdicts: dict[str, Verdict],
    sides: dict[tuple[str, str], str],
    found: tuple[Holders, set[str], set[str]],
    starts: dict[str, pd.Timestamp | None],
) -> RequestBlock:
    """One block from its spans' rows (by start; see `_spans_by_owner`); `found`: the
    holders of each id, the callers in an unlinked finding, the worker-only callers;
    `starts`: callers whose start is not logged (`trace_starts.unlogged_starts`)."""
    holders, lost, stand_ins = found
    caller = next(
        (s for s in spans if str(s.span_id) == root_id and s.side == FRONTEND), None
    )
    root: Any = caller if caller is not None else spans[0]
    verdict = verdicts[root_id] if caller is not None else Verdict(NO_CALLER)
    overlaps: tuple[str, ...] = ()
    if caller is not None:
        overlaps = tuple(
            overlapping(holders, root.request_id, root_id, caller.start_us,
                        getattr(caller, HELD_END))
            .tolist()
        )
    elif root_id in stand_ins:  # its worker spans stand for it, as in analyze
        overlaps = overlaps_of_spans(
            holders, root_id, [(s.request_id, s.start_us, getattr(s, HELD_END)) for s in spans])
    kinds = {
        CROSSED_STREAM: verdict.label == CROSSED,
        DUPLICATE_IN_FLIGHT: bool(overlaps),
        UNLINKED: root_id in lost,
    }
    start_logged = root_id not in starts
    stated = starts.get(root_id)
    t0 = pd.Timestamp(root.start if stated is None else stated)
    duration: float | None = ms_since(_latest_end(spans) if caller is None else root.end, t0)
    if not start_logged and stated is None:
        duration = None  # it began before its first line read, nobody knows when
    return RequestBlock(
        span_id=root_id,
        request_id=logged_id("request_id", root, spans),
        x_request_id=logged_id("x_request_id", root, spans),
        trace_id=text(getattr(root, LOGGED_TRACE_ID)),
        route=text(root.route),
        status=text(root.status),
        outcome=shown_outcome(root),
        start=t0,
        duration_ms=duration,
        start_logged=start_logged,
        verdict=verdict,
        findings=tuple(k for k in ERROR_KINDS if kinds[k]),
        overlaps=overlaps,
        deprecated_headers=header_names(text(root.deprecated)),
        spans=[
            SpanBar(_side(s, sides), str(s.span_id), 0.0 if s is caller else ms_since(s.start, t0),
                    ms_since(s.end, t0), shown_outcome(s), str(s.file),
                    closed=s.closing is not False or _step_of_an_answer(s, caller),
                    opened=s is not caller or start_logged or stated is not None,
                    name=text(getattr(s, "span_name", None)))
            # The caller first, as its start's is the block's clock; then by start.
            for s in sorted(spans, key=lambda s: s is not caller)
        ],
    )


def shown_outcome(span: Any) -> str | None:
    """The span's logged outcome; where it logged none, `error` for an answer that
    `export jaeger` flags as failed (an HTTP 5xx: Dynamo at INFO level logs only "http
    response sent", with its status), so trace and Jaeger tell one story."""
    logged = text(span.outcome)
    if logged is None and failed(None, span.status):
        return OUTCOME_ERROR
    return logged


def header_names(listed: str | None) -> tuple[str, ...]:
    """The deprecated headers a request sent, from its comma-separated list: each name
    once, in lower case, as `audit` counts them (a pre-fix Dynamo request's
    `x_dynamo_request_id` reads as ``x-dynamo-request-id`` here too)."""
    names = (name.strip().lower() for name in (listed or "").split(","))
    return tuple(dict.fromkeys(name for name in names if name))


def _step_of_an_answer(span: Any, caller: Any) -> bool:
    """Whether `span` is a step of its block's caller (a frontend span under it: Dynamo's
    `generate`), which answered: a step logs no end of its own, its request's answer
    ends it (as `export jaeger` judges it); "no end" says a process died mid-request."""
    return (caller is not None and span is not caller and span.side != WORKER
            and caller.closing is not False)


def _latest_end(spans: list[Any]) -> Any:
    """The last end among `spans` (missing ones skipped, as pandas' max does)."""
    return pd.Series([s.end for s in spans]).max()
