"""The error rules of `ridtrace.forensics.rules`, evaluated as events arrive.

Each finding is emitted once, when the logs make it certain:

- ``duplicate_in_flight``: a span takes a request_id another caller's span holds while
  that one is still open (or ended after this one started). As in
  `rules.overlap.duplicate_in_flight`, callers must be distinct: a worker span, or a
  span nested in a known one, stands for its caller, so retries are one request.
- ``crossed_stream``: a finished caller's ``request.end`` fingerprints and a finished worker
  output are both in, the caller's (fp_in, fp_out) pair is no worker's own work, and
  the caller's own worker spans are all closed (`rules.streams.crossed_stream`).
- ``unlinked``: a ``response.unlinked`` event (Dynamo's Unlinked errors included) or a
  ``stream.foreign_chunk``, when seen.

A batch's events arrive collapsed to one row per span (`parse.span_rows`), and the
rules are evaluated once per batch, after all its rows: a span's side or parent seen
later in the same batch is known before it is judged.
"""

from __future__ import annotations

import gc

from ridtrace.contract import (
    OUTCOME_CONFLICT,
    OUTCOME_ERROR,
    OUTCOME_OK,
    RESPONSE_UNLINKED,
    WORKER,
)
from ridtrace.forensics.live.eviction import clusters_leaving, fronts_leaving
from ridtrace.forensics.live.findings import Finding, _finding
from ridtrace.forensics.live.parse import COLUMNS, Flag, SpanRows
from ridtrace.forensics.live.rejoin import earlier_part, held_longer
from ridtrace.forensics.live.spans import Cluster, Span
from ridtrace.forensics.live.verdicts import crossed, duplicates
from ridtrace.forensics.live.window import WindowState, names_no_span
from ridtrace.forensics.rules.details import foreign_chunk_detail


class LiveRules:
    """Incremental rules over a sliding window of log time."""

    def __init__(self, *, window_s: float) -> None:
        self.state = WindowState(window_us=int(window_s * 1e6))
        self.spans_seen = 0
        self.callers_seen = 0
        # Frontend spans seen, and those still one line at one instant (`rules.instants`).
        self.fronts_seen = 0
        self.instants = 0

    def feed(
        self, batch: SpanRows, file_marks: dict[str, int] | None = None,
        behind: dict[str, int] | None = None, limit: int | None = None,
        unseen: int | None = None, settled_batch: int | None = None,
        unfinished: dict[str, int] | None = None,
    ) -> list[Finding]:
        """Take a batch (per-span rows in first-line order); return what it made certain.

        `file_marks` gives, for each file not read to its end, the log time it has been
        read up to; judgements that a lagging file could still change wait for it.
        `behind`: those of them with written bytes left to read, whose spans the window
        keeps until they are read past them. `limit`: times past it are a wild clock's,
        which the window does not take as the present (the batch's watermark is below it).
        `unseen`: the log time a file not followed yet holds every line up to (None: any).
        `settled_batch`: the latest batch fed a settle time ago (None: every one).
        `unfinished`: the files of `file_marks` not read to their end (a piece of a line
        held included), which a verdict taken as its spans leave the window waits for.
        """
        self.state.batches += 1
        self.state.settled_batch = settled_batch
        if file_marks is not None:
            self.state.file_marks = file_marks
        if behind is not None:
            self.state.behind = behind
        if unfinished is not None:
            self.state.unfinished = unfinished
        if limit is not None:
            self.state.limit = limit
        self.state.unseen = unseen
        # The window holds up to millions of small objects: a cyclic GC pass per few
        # hundred new spans would walk them all (it cost 10× the rules themselves).
        # Eviction breaks every cycle the state makes, so reference counting frees it.
        enabled = gc.isenabled()
        gc.disable()
        try:
            return self._feed(batch)
        finally:
            if enabled:
                gc.enable()

    def _feed(self, batch: SpanRows) -> list[Finding]:
        # One pass over the rows with the common case inline (a new span, a fresh id,
        # no flag): a method call, a dataclass or a Counter miss per span cost more than
        # the rest of its handling. Each row's steps, in this order, are the rule.
        state = self.state
        spans = state.spans
        get, move = spans.get, spans.move_to_end
        by_id, produced, pairs, waiting = state.clusters, state.produced, state.pairs, state.waiting
        orphans = state.orphans
        found: list[Finding] = []
        # Judged once the batch is in: a span's later piece (its lines in the file a
        # rotation's copy was made from) gives the span's last line, which the batch
        # report cites, as it cites it.
        unlinked: list[tuple[Span, Flag, str]] = []
        clusters: list[Cluster] = []
        fronts: list[Span] = []
        new_spans = new_callers = new_fronts = instants = 0
        flags: list[Flag | None] = [None] * batch.rows
        for row, flag in batch.flags.items():
            flags[row] = flag
        rows = zip(*(batch.columns[c] for c in COLUMNS), flags, strict=True)
        for (trace, span_id, file, first_line, last_line, t0, t1, rid, xrid, parent, fp_in,
             fp_out, outcome, worker, closing, request_end, worker_end, first_time,
             started, inner, outer, flag) in rows:
            first_time = t0 if first_time is None else first_time
            key = (trace, span_id)
            span = get(key)
            late_work = False
            if span is None:
                if inner and not worker and trace is not None and names_no_span(parent):
                    parent = state.inner_parent(trace, t0, rid)
                span = Span(trace, span_id, file, first_line, last_line, t0, t1 if t1 > t0 else t0,
                            parent, WORKER if worker else None, xrid, fp_in, fp_out, outcome)
                span.first_time = first_time
                span.started = started
                spans[key] = span
                new_spans += 1
                if not worker:
                    new_fronts += 1
                    state.front_seen(key, 1)
                    # One closing line, no start stated (`rules.instants`): a span
                    # whose one line opened it is in flight, its start known.
                    if first_line == last_line and t1 <= t0 and closing:
                        span.instant = True
                        instants += 1
                up = get((trace, parent)) if parent is not None else None
                if up is None and trace is None and parent is not None:
                    # Logged without a trace id: its parent by span id alone.
                    named = state.caller_named(parent)
                    up = get(named) if named is not None else None
                if up is not None:
                    span.parent_span = up
                    up.open_children += 1
                    if worker:
                        up.worked = True
                else:
                    new_callers += state.park(trace, span)
                if outer and not worker and trace is not None:
                    state.host_seen(trace, span, closing)  # and the inner spans before it
                if orphans and key in orphans:  # read after spans that work for it
                    new_callers -= state.adopt(key, span)
                if orphans and trace is not None and (None, span_id) in orphans:
                    # Read after spans that name it without a trace id.
                    new_callers -= state.adopt((None, span_id), span)
                # A worker's refusal (a Conflict) never held the id: another request did.
                if rid is not None and not (worker and outcome == OUTCOME_CONFLICT):
                    # The span holding the id for it (`Span.holder`): a worker's caller.
                    own = up if worker and up is not None and up.side != WORKER else span
                    cluster = by_id.get(rid)
                    with_caller = None if own is span else next(
                        (c for c in reversed(own.clusters) if c.request_id == rid), None)
                    if with_caller is not None:
                        # Its caller holds the id in a cluster already: the worker span is
                        # that request's, wherever the id's holders are now. Read late (a
                        # worker's log flushed behind its frontend's), it joined the id's
                        # latest cluster by its caller's start, which made that cluster
                        # begin with long-done callers: printed again under the first's
                        # name, and its own duplicate never printed.
                        span.request_id = rid
                        with_caller.members.append(span)
                        span.clusters = [with_caller]
                    elif cluster is None:  # a fresh id: a cluster of one, nothing to judge
                        span.request_id = rid
                        cluster = by_id[rid] = Cluster(rid, [span], own.last)
                        span.clusters = [cluster]
                    # Overlaps (`WindowState.join`): by its holder's start, as `join` has it;
                    # a worker's own start is on its own clock, seconds off its caller's.
                    elif own.start < cluster.max_end and not cluster.after(span):
                        span.request_id = rid
                        members = cluster.members
                        # A caller and its worker span, alone in the cluster (either may
                        # come first): one caller, whose id neither can change, so no
                        # duplicate now or later in this batch unless a third span joins.
                        held = members[0]
                        alone = len(members) == 1 and (
                            (worker and held.parent is None and held.span_id == parent
                             and (held.trace == trace or trace is None))
                            or (parent is None and held.side == WORKER
                                and held.parent == span_id
                                and (held.trace == trace or held.trace is None))
                        )
                        members.append(span)
                        if own.last > cluster.max_end:
                            cluster.max_end = own.last
                        span.clusters = [cluster]
                        if cluster.previous is not None:
                            cluster = state.merge_previous(cluster, span)
                        if not alone:
                            clusters.append(cluster)
                    else:
                        cluster = state.join(span, rid)
                        if len(cluster.members) > 1:
                            clusters.append(cluster)
            else:
                move(key)
                if span.instant:  # a second line: it has a start of its own
                    span.instant = False
                    instants -= 1
                # An earlier part's lines, by their own times (`Span.first_time`).
                if first_time < span.first_time and file != span.file:
                    span.first_time, span.file, span.first_line = first_time, file, first_line
                if started:
                    span.started = True
                elif span.started:  # its end's duration dates back no start line read
                    t0 = first_time
                if t0 < span.start:
                    clusters.extend(earlier_part(state, span, t0))
                later = file == span.last_file or t1 >= span.last  # else an earlier part
                if later:
                    span.last_line = last_line
                    span.last_file = file
                grew = t1 > span.last
                if grew:
                    span.last = t1
                if worker and span.side != WORKER:
                    if span.side is None:
                        state.front_seen(key, -1)  # counted a frontend span when read
                    span.side = WORKER
                    # Its caller's work is read after all: a worker's middleware line came
                    # first, alone in its poll, and linked it as no worker's, so a crossed
                    # caller was let go as one whose own work was never read.
                    if span.parent_span is not None:
                        span.parent_span.worked = True
                if span.x_request_id is None:
                    span.x_request_id = xrid
                if span.fp_in is None:
                    span.fp_in = fp_in
                if span.fp_out is None:
                    span.fp_out = fp_out
                if span.outcome is None:
                    span.outcome = outcome
                # Its end read before its start (a rotated part read behind): its output
                # counts once its fp_in, on the start line, is in too.
                late_work = span.work_ended and not span.paired
                if rid is not None and rid != span.request_id:
                    own_id = span.request_id
                    cluster = state.join(span, rid)
                    if not later and own_id is not None:
                        # It held `rid` then (a minted id, the legacy policy), and holds
                        # its later lines' id now, the one `analyze` reports it under.
                        span.request_id = own_id
                    if len(cluster.members) > 1:  # one span alone holds no duplicate
                        clusters.append(cluster)
                if span.clusters:
                    own = span.holder()
                    for cluster in span.clusters:
                        if own.last > cluster.max_end:
                            cluster.max_end = own.last
                if grew and span.request_id is not None:
                    clusters.extend(held_longer(state, span, span.request_id))
            if flag is not None and not span.unlinked_done:
                span.unlinked_done = True
                unlinked.append((span, flag, file))
            if worker_end or late_work:
                # A worker's (fp_in, fp_out) is its caller's own work; its ok output is
                # what a crossed caller may have been delivered.
                span.work_ended = True
                fp_in, fp_out = span.fp_in, span.fp_out
                if fp_in is not None and fp_out is not None:
                    if not span.paired:
                        span.paired = True
                        pair = (fp_in, fp_out)
                        pairs[pair] = pairs.get(pair, 0) + 1
                    if span.outcome == OUTCOME_OK:
                        produced.setdefault(fp_out, {})[id(span)] = span
                        if fp_out in waiting:
                            for front in waiting.pop(fp_out):
                                front.waiting = False
                                fronts.append(front)
            # A line stating a failure ends its span, though no closing one: Dynamo's
            # 'engine generate call failed' (an INFO-level generate span's one line). Left
            # open, it held its id for the window's length, and the id's next holder
            # seconds later was printed as a duplicate `analyze` does not report.
            if closing or (outcome == OUTCOME_ERROR and not started):
                if not span.closed:
                    span.closed = True
                    up = span.parent_span
                    if up is not None:
                        up.open_children -= 1
                        if up.closed and up.open_children <= 0:
                            fronts.append(up)  # its own work is all in: judge it again
                if request_end and span.side != WORKER:
                    if (not span.crossed_done and span.fp_in is not None
                            and span.fp_out is not None and (span.fp_in, span.fp_out) in pairs):
                        # Its own worker's pair is in (its worker read first): not crossed,
                        # as `verdicts.crossed` would find after the batch, whatever comes later.
                        span.crossed_done = True
                    else:
                        fronts.append(span)
        self.spans_seen += new_spans
        self.callers_seen += new_callers
        self.fronts_seen += new_fronts
        self.instants += instants
        if batch.rows:
            state.watermark = max(state.watermark, batch.watermark)
        found.extend(self._unlinked(span, flag, file) for span, flag, file in unlinked)
        found.extend(duplicates(state, clusters))
        found.extend(crossed(state, fronts))
        if batch.rows:
            # Verdicts still waiting on a settle time or a quiet file are taken before
            # the window drops their spans: a history read faster than real time, or a
            # file whose clock runs ahead by more than the window, dropped them unsaid.
            if state.pending_clusters and (leaving := clusters_leaving(state)):
                found.extend(duplicates(state, [], leaving))
            if state.pending_fronts and (callers := fronts_leaving(state)):
                found.extend(crossed(state, [], callers))
            judged = len(state.pending_fronts)
            state.evict()
            if len(state.pending_fronts) > judged:  # a caller's never-ended worker left
                found.extend(crossed(state, []))
        return found

    def _unlinked(self, span: Span, flag: Flag, file: str) -> Finding:
        if flag.event == RESPONSE_UNLINKED:
            detail = flag.text or flag.event
        else:
            detail = foreign_chunk_detail(flag.chunk_request_id)
        # The error line and the span's last line read, as the batch rule cites them.
        return _finding("unlinked", span, span.start, detail,
                        [(file, flag.line), (span.last_file, span.last_line)])

    def finish(self) -> list[Finding]:
        """The follow ends: callers still waiting for a worker span of their own that
        never ended (its worker killed mid-request, retried elsewhere) are judged with
        what was read, as the batch report judges them."""
        fronts = [span for span in self.state.spans.values()
                  if span.closed and span.open_children > 0 and not span.crossed_done]
        for front in fronts:
            front.open_children = 0
        return crossed(self.state, fronts)

    def open_spans(self) -> int:
        """Spans in the window that have not ended (open at exit, not findings)."""
        return sum(1 for span in self.state.spans.values() if not span.closed)
