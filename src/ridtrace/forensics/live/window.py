"""The live state: request spans still inside the window, and what they are waiting for.

Spans (`live.spans`) live in an ordered dict sorted by their last line's arrival, so
the window's edge is always at its front: evicting is popping from the front, and the
state holds what the window holds, not what was ever read.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from ridtrace.contract import WORKER
from ridtrace.forensics.live.eviction import evict_outside
from ridtrace.forensics.live.regroup import regroup
from ridtrace.forensics.live.spans import (
    Cluster,
    Span,
    SpanKey,
    held_beside,
    held_by_silent_only,
)
from ridtrace.forensics.rules import INNER_START_LEEWAY_US

# The parent an inner span logged without one names until its trace's host is read
# (`WindowState.inner_parent`): no logged span id is spelt so.
AWAITED_HOST = "\x00host"


def names_no_span(parent: str | None) -> bool:
    """Whether a parent id names no span: none, empty, or the all-zero invalid id."""
    return parent is None or not parent.lower().removeprefix("0x").strip("0")


@dataclass
class WindowState:
    """Spans inside the window and the indexes the rules look them up by."""

    window_us: int
    spans: OrderedDict[SpanKey, Span] = field(default_factory=OrderedDict)
    clusters: dict[str, Cluster] = field(default_factory=dict)
    # (fp_in, fp_out) of every worker span with both: a caller's own work.
    pairs: dict[tuple[str, str], int] = field(default_factory=dict)
    # fp_out → the worker spans that finished with it, by id(): identical prompts give
    # identical replies, and a crossed caller is named the one that could have reached
    # it (`reaching_work`), as `rules.producers` names it after the batch.
    produced: dict[str, dict[int, Span]] = field(default_factory=dict)
    # fp_out → callers delivered it, waiting for the worker that produced it.
    waiting: dict[str, list[Span]] = field(default_factory=dict)
    watermark: int = 0
    # Times past this are a wild clock's, not the present (`Follower`): the window
    # places such a span by its start, or lets it go when it reaches the front.
    limit: int = 2**63 - 1
    open_at_edge: int = 0
    # Per file: the log time it has been read up to (absent: read to its end). A span
    # is certainly still open at time t only if its file was read past t without its end.
    file_marks: dict[str, int] = field(default_factory=dict)
    # Those of them read behind what is written (not a held piece of a line, which a
    # writer killed mid-line leaves for good): the window waits for them.
    behind: dict[str, int] = field(default_factory=dict)
    # Those not read to their end, a held piece of a line included (`behind` and more):
    # a verdict taken as its spans leave the window waits for them alone.
    unfinished: dict[str, int] = field(default_factory=dict)
    # The log time a log not followed yet holds every line up to (None: no bound). A
    # service creates its log when it first flushes it: until then the follower knows
    # no such file, whose lines may be older than what the others show (`--settle`).
    unseen: int | None = None
    # Batches fed, and the latest fed a settle time ago (None: all): `verdicts.caller_may_come`.
    batches: int = 0
    settled_batch: int | None = None
    # (trace_id, parent span id) → spans read before the span they name as parent: a
    # worker file ahead of its caller's (clock skew, flushing), a caller whose first line
    # was torn. They are linked to it when it comes, so it is one request with them.
    orphans: dict[SpanKey, list[Span]] = field(default_factory=dict)
    # trace_id → its frontend spans in the window. A worker span whose parent is not in
    # the logs stands for its caller only when its trace has none (`stands_for_caller`).
    front_traces: dict[str | None, int] = field(default_factory=dict)
    # span id → the traces of the frontend spans in the window with that id: a worker
    # span logged without a trace id names its caller by span id alone.
    front_span_traces: dict[str, dict[str | None, int]] = field(default_factory=dict)
    # trace_id → its Dynamo http-request spans in the window, which a span Dynamo opens
    # inside one and logs without its parent is nested in (`inner_parent`).
    # Each entry is [host, whether an inner span was nested in it]: a host has one.
    hosts: dict[str, list[list[Any]]] = field(default_factory=dict)
    # Judgements the files read so far cannot settle yet: tried again every batch.
    pending_clusters: list[Cluster] = field(default_factory=list)
    pending_fronts: list[Span] = field(default_factory=list)

    def front_seen(self, key: SpanKey, count: int) -> None:
        """Count (`count` 1) or forget (-1) the frontend span `key` (trace, span id)."""
        trace, span_id = key
        if count < 0 and trace is not None and trace in self.hosts:
            kept = [entry for entry in self.hosts[trace] if entry[0].span_id != span_id]
            if kept:
                self.hosts[trace] = kept
            else:
                del self.hosts[trace]
        _count(self.front_traces, trace, count)
        traces = self.front_span_traces.setdefault(span_id, {})
        _count(traces, trace, count)
        if not traces:
            del self.front_span_traces[span_id]

    def inner_parent(self, trace: str, start: int, request_id: str | None = None) -> str | None:
        """The parent of an inner span of `trace` logged without one, which started at
        `start` (Dynamo's ``generate`` inside ``http-request``; the batch read's rule,
        `records.nesting`): the one host it started in (of several, the one whose
        request_id is the span's own, when one is); `AWAITED_HOST` when none is read yet
        (`park` holds it until `host_seen`); None when several are."""
        within = [entry for entry in self.hosts.get(trace, ()) if _started_in(entry[0], start)]
        if len(within) > 1 and request_id is not None:
            own = [entry for entry in within if entry[0].request_id == request_id]
            within = own or within
        free = [entry for entry in within if not entry[1]]
        if len(free) == 1 and len(within) == 1:
            free[0][1] = True
            return str(free[0][0].span_id)
        return AWAITED_HOST if not within else None

    def host_seen(self, trace: str, host: Span, closing: bool) -> None:
        """A new http-request span of `trace`: the inner spans of the trace read before it
        that started in it are its children from now."""
        entry: list[Any] = [host, False]
        self.hosts.setdefault(trace, []).append(entry)
        kids = self.orphans.get((trace, AWAITED_HOST))
        if not kids:
            return
        within = [kid for kid in kids if _started_in(host, kid.start, closing)]
        if not within:
            return
        mine = [min(within, key=lambda kid: kid.start)]  # a host has one inner span
        entry[1] = True
        rest = [kid for kid in kids if kid is not mine[0]]
        if rest:
            self.orphans[(trace, AWAITED_HOST)] = rest
        else:
            del self.orphans[(trace, AWAITED_HOST)]
        for kid in mine:
            kid.parent = host.span_id
        self.orphans.setdefault((trace, host.span_id), []).extend(mine)

    def caller_named(self, parent: str) -> SpanKey | None:
        """The frontend span a span logged without a trace id names as `parent`: the one
        span of that id in the window (None when no trace, or several, have it)."""
        traces = self.front_span_traces.get(parent)
        if traces is None or len(traces) != 1:
            return None
        (trace,) = traces
        return (trace, parent)

    def stands_for_caller(self, span: Span) -> bool:
        """Whether `span` holds its id as a caller would, as the batch rule's rows: a
        frontend span, a worker span linked to its caller (who holds the id for it), or
        a worker span of a trace whose frontend logs are absent. A worker whose parent
        is a frontend span that logged nothing (one nested in ``http-request``) while
        its trace's ``http-request`` span is read works for that request: counted as a
        caller of its own, each request was a duplicate of itself."""
        # A missing trace id matches nothing (as `SpanColumns.trace_in_front` has it).
        return (span.side != WORKER or span.parent_span is not None or span.trace is None
                or span.trace not in self.front_traces)

    def read_up_to(self, file: str) -> int:
        """The log time `file` is known up to (the latest time seen when it is caught up)."""
        return self.file_marks.get(file, self.watermark)

    def open_up_to(self, span: Span) -> int:
        """The log time up to which an open `span` is known not to have ended: its last
        line's file's mark, and no later than any file read behind the others. Its end
        may be in another file: a request in flight at a rotation has its start in the
        renamed part, read to its end, and its end in the live file, read behind (a
        backlog); taken from the part alone, it looked in flight past its end."""
        known = self.read_up_to(span.last_file)
        return min(known, *self.behind.values()) if self.behind else known

    def caught_up_to(self, *, unseen: bool = False) -> int:
        """The log time every file has been read up to (`unseen`: every log still to
        appear too, for a judgement that waits on one rarely, so waits a settle time)."""
        known = min(self.file_marks.values(), default=self.watermark)
        return known if not unseen or self.unseen is None else min(known, self.unseen)

    def overlap(self, first: Span, second: Span) -> bool | None:
        """Did `first` (started no later) still run when `second` started? None: not known yet.

        Two spans that start in the same microsecond overlap when either lasts longer
        than that microsecond, as in the batch rule: which came first in the lines does
        not decide it.
        """
        if first.last > second.start:
            return True
        if first.start == second.start:
            either = (self._lasts(first), self._lasts(second))
            return True if True in either else None if None in either else False
        if first.closed:
            return False
        return True if self.open_up_to(first) >= second.start else None

    def _lasts(self, span: Span) -> bool | None:
        """Did `span` run past its first microsecond? None: not known yet."""
        if span.last > span.start:
            return True
        if span.closed:
            return False
        return True if self.open_up_to(span) > span.start else None

    def join(self, span: Span, request_id: str) -> Cluster:
        """Add `span` to `request_id`'s cluster (a new one if it overlaps nothing held)."""
        span.request_id = request_id
        cluster = self.clusters.get(request_id)
        if cluster is not None and cluster in span.clusters:
            return cluster  # back to an id it held: already counted there
        # Overlap as the batch rule sees it, plus: a caller's worker span belongs with
        # its caller, even when it outlives every span of the cluster (a detached pump).
        # A worker span stands for its caller: the caller may have been in flight (its
        # start logged under a minted id, the legacy policy) before its worker took the id.
        own = span.holder()
        if cluster is not None and cluster.after(span):
            # Read late, over before the id's current holders: with the earlier ones.
            late = cluster.previous
            if late is None or not held_beside(late, span, own.start):
                late = Cluster(request_id, [], own.last)  # alone: displaces nobody
            late.members.append(span)
            late.max_end = max(late.max_end, own.last)
            span.clusters = [*span.clusters, late]
            return late
        if (cluster is None or not held_beside(cluster, span, own.start)
                or (cluster.reported and held_by_silent_only(cluster, span, own.start))):
            previous, cluster = cluster, Cluster(request_id, [span], own.last)
            if previous is not None:
                previous.previous = None
            cluster.previous = previous
            self.clusters[request_id] = cluster
        else:
            cluster.members.append(span)
            if own.last > cluster.max_end:
                cluster.max_end = own.last
        if span.clusters:
            span.clusters.append(cluster)
        else:
            span.clusters = [cluster]
        return self.merge_previous(cluster, span)

    def merge_previous(self, cluster: Cluster, span: Span) -> Cluster:
        """`cluster` and the id's previous one as one (returned) when `span`, just
        joined, held the id beside both: `analyze` clusters holders by start, so a holder
        that bridges two clusters makes them one duplicate (a legacy caller whose worker
        took the id late; a reported caller's Unlinked error after its end, which printed
        it again once the next cluster had a second holder). A reported one stays as it
        was printed: the other's holders are not added to its finding."""
        previous = cluster.previous
        start = span.holder().start
        if (previous is None or not previous.members
                or (previous.reported and cluster.reported)
                or not held_beside(previous, span, start)
                or (previous.reported and held_by_silent_only(previous, span, start))):
            return cluster
        keep, gone = (previous, cluster) if previous.reported else (cluster, previous)
        keep.previous = None
        have = {id(m) for m in keep.members}
        for m in gone.members:
            held = m.clusters
            if isinstance(held, list):
                held.remove(gone)
                if keep not in held:
                    held.append(keep)
            if id(m) not in have:
                have.add(id(m))
                keep.members.append(m)
        gone.members = []
        keep.max_end = max(keep.max_end, gone.max_end)
        if self.clusters.get(keep.request_id) is gone:
            self.clusters[keep.request_id] = keep
        return keep

    def park(self, trace: str | None, span: Span) -> int:
        """Hold a span whose parent is not read (yet); 1 if it is a caller not counted yet.

        A worker span works for its parent, counted once for all its siblings; any other
        span is its own caller until its parent comes.
        """
        if span.parent is None:
            return 1
        span.read_in = self.batches
        kin = self.orphans.setdefault((trace, span.parent), [])
        counted = span.side == WORKER and any(k.side == WORKER for k in kin)
        kin.append(span)
        return 0 if counted else 1

    def adopt(self, key: SpanKey, span: Span) -> int:
        """Link the spans read before `span`, their parent; the callers that were double
        counted (`park` counted them as callers of their own or of a span not yet read).
        """
        kids = self.orphans.pop(key)
        counted = sum(1 for k in kids if k.side != WORKER) + any(k.side == WORKER for k in kids)
        for kid in kids:
            kid.parent_span = span
            if not kid.closed:
                span.open_children += 1
            if kid.side == WORKER:
                span.worked = True
        regroup(self, kids)
        # The kids now work for `span`'s caller (`Span.caller` climbs), counted already:
        # `span` itself when it is its own, else when its own caller was read or parked.
        return counted

    def wait(self, front: Span) -> None:
        """Park a caller until a worker's output for its fp_out is seen."""
        if not front.waiting and front.fp_out is not None:
            front.waiting = True
            self.waiting.setdefault(front.fp_out, []).append(front)

    def evict(self) -> int:
        """Drop spans with no line inside the window; returns how many were dropped
        (`live.eviction`)."""
        return evict_outside(self)

    def release(self) -> None:
        """Forget everything held, freed at once by reference counting.

        A span and its cluster point at each other; left as they are, a whole window
        waits for a full pass of the cycle collector: 0.58 CPU-s for the 266,667 spans
        of the follow benchmark's 1M lines, against 0.13 this way.
        """
        for span in self.spans.values():
            for cluster in span.clusters:
                cluster.members = []
            span.clusters = ()
            span.parent_span = None
        self.spans.clear()
        self.clusters.clear()
        self.pairs.clear()
        self.produced.clear()
        self.waiting.clear()
        self.orphans.clear()
        self.front_traces.clear()
        self.front_span_traces.clear()
        self.hosts.clear()
        self.pending_clusters = []
        self.pending_fronts = []

    def size(self) -> int:
        """Entries held: spans plus index entries (what memory follows)."""
        return len(self.spans) + len(self.clusters) + len(self.pairs) + sum(
            len(v) for v in self.produced.values()
        ) + sum(len(v) for v in self.waiting.values()) + len(self.orphans)


def _started_in(host: Span, start: int, closing: bool | None = None) -> bool:
    """Whether a span that started at `start` started within `host` (`records.nesting`)."""
    closed = host.closed if closing is None else closing
    return host.start - INNER_START_LEEWAY_US <= start and (not closed or start <= host.last)


def _count(counts: dict[str | None, int], key: str | None, count: int) -> None:
    held = counts.get(key, 0) + count
    if held > 0:
        counts[key] = held
    else:
        counts.pop(key, None)


def reaching_work(made: dict[int, Span] | None, caller: Span) -> Span | None:
    """Of the worker spans that finished with a caller's output, the one that could have
    reached it: the last to start no later than the caller's end, else the first to start
    (ties by span id), as `rules.producers.reaching_producers` picks after the batch."""
    if not made:
        return None
    before = [w for w in made.values() if w.start <= caller.last]
    if before:
        return max(before, key=lambda w: (w.start, w.span_id))
    return min(made.values(), key=lambda w: (w.start, w.span_id))
