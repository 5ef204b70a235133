"""What the live rules know of one request span, and of the spans sharing a request_id.

A span is keyed by (trace_id, span_id), unique per request even when request ids
collide, as in the batch read. The window that holds them is `live.window`.
"""

from __future__ import annotations

from ridtrace.contract import WORKER
from ridtrace.forensics.rules import MAX_CALLER_DEPTH

SpanKey = tuple[str | None, str]


class Cluster:
    """Spans that held one request_id at overlapping times (reported at most once).

    `max_end`: the latest last line of the members' holders (`Span.holder`), not of a
    worker span that ran on after its caller left.
    """

    __slots__ = ("max_end", "members", "previous", "reported", "request_id")

    def __init__(self, request_id: str, members: list[Span], max_end: int = 0) -> None:
        self.request_id = request_id
        self.members = members
        self.max_end = max_end
        self.reported = False
        # The id's cluster before this one (one back only, so the state stays bounded):
        # a caller whose worker takes the id late may have started beside it.
        self.previous: Cluster | None = None

    def after(self, span: Span) -> bool:
        """Whether every member's holder started once the caller `span` works for had
        ended: a worker span read late (stamped ahead of the other logs, so taken once
        they caught up with it) belongs with the id's earlier holders, not with these.
        Only a worker's: a caller's own start may still move earlier (its first lines in
        a rotated part read behind), and so may the members'."""
        holder = span.holder()
        return holder is not span and holder.closed and bool(self.members) and all(
            holder.last <= m.holder().start for m in self.members)


class Span:
    """What the rules know of one request span so far (times in epoch µs).

    A plain slotted class with one positional constructor: the rules make one per span
    of the window (hundreds of thousands), and a dataclass's defaults and factories
    cost more than the rest of a common span's handling.
    """

    # __weakref__: tests watch evicted spans being freed.
    __slots__ = (
        "__weakref__", "closed", "clusters", "crossed_done", "file", "first_line",
        "first_time", "fp_in", "fp_out", "instant", "last", "last_file", "last_line",
        "open_children", "outcome", "paired", "parent", "parent_span", "read_in",
        "reported_ids", "request_id", "side", "span_id", "start", "started", "trace",
        "unlinked_done", "waiting", "work_ended", "worked", "x_request_id",
    )

    # The batch a span read before its caller was first read in (`WindowState.park`);
    # left unset on the common span, which never needs it.
    read_in: int

    def __init__(self, trace: str | None, span_id: str, file: str, first_line: int,
                 last_line: int, start: int, last: int, parent: str | None, side: str | None,
                 x_request_id: str | None,
                 fp_in: str | None, fp_out: str | None, outcome: str | None) -> None:
        self.trace = trace
        self.span_id = span_id
        self.file = file
        # The file of its last line: a span in flight when its log rotated has its first
        # lines in the rotated part and its last ones in the new file.
        self.last_file = file
        self.first_line = first_line
        # When `first_line` was written; `start` may be earlier, dated back by a stated
        # duration (Dynamo's latency_ms) on a closing line in another file.
        self.first_time = start
        self.last_line = last_line
        self.start = start
        # Its ridtrace start line read: it starts there, not by its end's duration.
        self.started = False
        self.last = last
        self.parent = parent
        self.parent_span: Span | None = None
        self.request_id: str | None = None
        self.x_request_id = x_request_id
        self.side = side
        self.fp_in = fp_in
        self.fp_out = fp_out
        self.outcome = outcome
        self.closed = False
        self.open_children = 0
        # A worker span naming it was read (doing its work, or refusing it): its workers'
        # logs were given, so another's output delivered to it is provable.
        self.worked = False
        # The request ids of the duplicates printed with this span first: a cluster that
        # late spans regroup (`live.regroup`) comes back new, and was printed again.
        self.reported_ids: set[str] | None = None
        # Every cluster it belongs to: a span that moves to another id (the legacy policy
        # re-keys a request) still held the old one in flight, so it stays a member there.
        # A shared empty tuple until it joins one: most spans join exactly one.
        self.clusters: list[Cluster] | tuple[()] = ()
        self.paired = False
        self.work_ended = False  # its worker.end was read (its output, once fp_in is in)
        self.waiting = False
        self.crossed_done = False
        self.unlinked_done = False
        # A frontend span seen as one line at one instant so far (`rules.instants`).
        self.instant = False

    def caller(self) -> str:
        """The span id of the caller it works for (`rules.overlap.caller_of`, live).

        A worker span works for its parent, and so does a span nested in a known span
        (Dynamo's ``generate`` inside ``http-request``); any other span is its own caller.
        A span working for a known span that works for another works for that one's
        caller (a Dynamo processor's worker, a decode worker's prefill worker).
        """
        span, steps = self, 0
        seen: set[int] | None = None  # made only past the depth, off the usual path
        while True:
            if span.parent is None or (span.side != WORKER and span.parent_span is None):
                return span.span_id
            up = span.parent_span
            if up is None or up is span:
                return span.parent
            steps += 1
            if steps > MAX_CALLER_DEPTH:
                # A chain deeper than any service makes is climbed to its top too, a cycle
                # of parents stopping it: stopped at a fixed depth, the spans of a chain of
                # 18 had two callers, and one request was printed as a duplicate in flight
                # where the batch rule holds the id by its frontend span alone.
                seen = seen if seen is not None else set()
                if id(up) in seen:
                    return span.span_id
                seen.add(id(up))
            span = up

    def holder(self) -> Span:
        """The span that holds the id for this one, as the batch rule's rows: a worker
        span's caller once the caller's own span is read (a worker may run on after
        its caller left, a detached pump, and that does not keep the id held), else
        the span itself."""
        up = self.parent_span
        if self.side == WORKER and up is not None and up.side != WORKER:
            return up
        return self

    def caller_key(self) -> SpanKey:
        """The caller as the spans are keyed, (trace_id, span id): a span id logged in two
        traces is two callers. A parent is looked up in the span's own trace."""
        return (self.trace, self.caller())


def held_by_silent_only(cluster: Cluster, span: Span, start: int) -> bool:
    """Whether `span`, whose holder started at `start`, holds its id beside `cluster`
    only through members with no end read and no line since `start`: a request whose
    process was killed, still open to the live rules for the window's length. Once
    such a cluster was printed, every later holder of the id joined it, and a complete
    duplicate of the id's next holders (which `analyze` reports) was never printed."""
    key = span.caller_key()
    silent = False
    for m in cluster.members:
        held = m.holder()
        if held.last > start or held.start == span.start or m.caller_key() == key:
            return False  # beside it as its lines show
        silent = silent or not held.closed
    return silent


def held_beside(cluster: Cluster, span: Span, start: int) -> bool:
    """Whether `span`, whose holder started at `start`, held its id beside `cluster`.

    Members count by their holders: a detached worker still streaming, or logging past
    the next caller's start, does not keep its caller's id held; joined to a cluster
    already reported, the next callers' duplicate was lost.
    """
    if start < cluster.max_end:
        return True
    key = span.caller_key()
    for m in cluster.members:
        held = m.holder()
        if (not held.closed or held.last > start or held.start == span.start
                or m.caller_key() == key):
            return True
    return False
