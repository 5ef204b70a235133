"""The verdicts `live.rules` asks for once per batch: duplicate ids, crossed streams.

Each judges the clusters or callers a batch touched, with those left pending by an
earlier batch (`WindowState.pending_clusters`, `pending_fronts`), and reports a finding
only once it is certain.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet

from ridtrace.contract import OUTCOME_OK, WORKER
from ridtrace.forensics.live.eviction import read_up_to
from ridtrace.forensics.live.findings import Finding, _cited, _finding, _named, _one_caller
from ridtrace.forensics.live.spans import Cluster, Span
from ridtrace.forensics.live.window import WindowState, reaching_work
from ridtrace.forensics.rules.details import crossed_detail


def duplicates(state: WindowState, clusters: list[Cluster],
               leaving: AbstractSet[int] = frozenset()) -> list[Finding]:
    """Clusters whose ids distinct callers certainly held at overlapping times, each
    reported once; those a lagging file could still change wait in the state.

    `leaving`: clusters (by `id`) the window is about to drop a member of, judged
    without the settle time's wait (`caller_may_come`).
    """
    found: list[Finding] = []
    todo = dict.fromkeys(state.pending_clusters + clusters)
    state.pending_clusters = []
    for cluster in todo:
        if cluster.reported or len(cluster.members) < 2:
            continue
        if _one_caller(cluster.members):
            continue  # one caller: its worker spans and retries
        # Callers overlap as their own spans do, as in the batch rule: a worker that
        # ran on after its caller left (a detached pump) made a later caller of the
        # id a duplicate live that `analyze` of the same logs does not report.
        cited = [m for m in _cited(cluster.members) if state.stands_for_caller(m)]
        verdict = overlapping_callers(state, cited)
        if verdict is None:
            state.pending_clusters.append(cluster)  # a lagging file may still end one
            continue
        if not verdict:
            continue
        if min(state.behind.values(), default=cited[0].start) < cited[0].start:
            # A file read behind (a rotated part read from its start) may still hold an
            # earlier start of a caller known so far by its later lines: the batch report
            # names the one that started first, so the finding waits for that file.
            state.pending_clusters.append(cluster)
            continue
        settle = id(cluster) not in leaving
        caught_up = state.caught_up_to(unseen=True) if settle else read_up_to(state)
        if any(_unlinked_worker(m) and caller_may_come(state, m, settle=settle)
               for m in cited):
            # A caller known by its worker span alone: its own lines, older than the
            # worker's, may still come in a log behind the others (or not created yet),
            # and `analyze` names the caller. Named now, the finding named the worker.
            state.pending_clusters.append(cluster)
            continue
        cluster.reported = True
        first = cited[0]
        if first.reported_ids is None:
            first.reported_ids = set()
        elif cluster.request_id in first.reported_ids:
            continue  # printed once already, as the cluster it was before a regroup
        first.reported_ids.add(cluster.request_id)
        # Each caller by its first span, as `rules.overlap` names them.
        callers: dict[tuple[str | None, str], Span] = {}
        for m in cited:
            callers.setdefault(m.caller_key(), m)
        names = [_named(m, caught_up) for m in callers.values()]
        if len(set(names)) < len(names):  # one span id in several traces: say which
            names = [f"{name} (trace {m.trace})"
                     for name, m in zip(names, callers.values(), strict=True)]
        detail = (f"{len(callers)} requests held request_id {cluster.request_id} at "
                  f"overlapping times (spans {', '.join(names)})")
        proof = [item for m in cited
                 for item in ((m.file, m.first_line), (m.last_file, m.last_line))]
        item = _finding("duplicate_in_flight", first, first.start, detail, proof,
                        request_id=cluster.request_id)
        item["span_id"] = _named(first, caught_up)
        found.append(item)
    return found

def _unlinked_worker(span: Span) -> bool:
    """A worker span whose caller is not read, or a span that may be one: named by its
    parent, neither read yet, with no worker line read yet (a worker's middleware writes
    ``request.start`` before its ``worker.start``). Judged at once as a caller on its
    own clock, such a span read in the poll before its ``worker.start``, on a worker
    whose clock runs behind, made back-to-back callers of one id a duplicate in flight
    (exit 1) that `analyze` of the same logs does not report."""
    return span.parent_span is None and (
        span.side == WORKER or (span.side is None and span.parent is not None))


def caller_may_come(state: WindowState, worker: Span, *, settle: bool = True) -> bool:
    """Whether the lines of the caller a `worker` span stands for (none read yet) may
    still come: some file not read past the worker's start, or the worker read less than
    a settle time ago. The second in wall-clock time: the caller logged before its
    worker did, and every log flushes within the settle time, whatever its clock says.
    By log time alone, a worker whose clock runs behind (or another whose clock runs
    ahead, moving the logs' latest time) looked read long after its caller could have
    logged, and the finding named worker spans whose callers' lines were on their way
    (`analyze` of the same files names the callers).

    With `settle` off, only a file with lines left to read: for a span leaving the
    window, which a history read faster than real time (``--from-start``, ``kubectl logs
    -f``), or a file whose clock runs ahead of the others by more than the window, moves
    on log time long before a settle time passes. Waiting dropped the verdict unsaid; a
    quiet file, or a log appearing later, has its lines that old outside the window.
    """
    if not settle:
        return read_up_to(state) < worker.start
    if state.caught_up_to(unseen=True) < worker.start:
        return True
    settled = state.settled_batch
    return settled is not None and getattr(worker, "read_in", 0) > settled


def overlapping_callers(state: WindowState, members: list[Span]) -> bool | None:
    """Two distinct callers certainly in flight together (None: not known yet)."""
    unknown = False
    for j, second in enumerate(members):
        for first in members[:j]:
            if first.caller_key() == second.caller_key():
                continue
            overlap = state.overlap(first, second)
            if overlap:
                return True
            unknown = unknown or overlap is None
    return None if unknown else False

def crossed(state: WindowState, fronts: list[Span],
            leaving: AbstractSet[int] = frozenset()) -> list[Finding]:
    """Finished callers delivered another caller's worker output, each judged once;
    those a lagging file or a worker still open could change wait in the state.

    `leaving`: callers (by `id`) the window is about to drop, judged on the files with
    lines left to read alone (`read_up_to`): a quiet file held them to its last line's
    time, and they were dropped unjudged.
    """
    found: list[Finding] = []
    todo = dict.fromkeys(state.pending_fronts + fronts)
    state.pending_fronts = []
    caught_up = state.caught_up_to()
    read_up = read_up_to(state) if leaving else caught_up
    for front in todo:
        if (front.crossed_done or front.side == WORKER or not front.closed
                or front.fp_in is None or front.fp_out is None):
            continue
        if front.outcome != OUTCOME_OK:
            # Cut short: a prefix of its reply, no proof (as `rules.streams`).
            front.crossed_done = True
            continue
        if state.pairs.get((front.fp_in, front.fp_out)):
            front.crossed_done = True  # its own work: not crossed, whatever comes later
            continue
        work = reaching_work(state.produced.get(front.fp_out), front)
        if work is None:
            state.wait(front)
            continue
        if front.open_children > 0:
            continue  # its own worker may still show the same pair
        if (read_up if id(front) in leaving else caught_up) < front.last:
            state.pending_fronts.append(front)  # a lagging file may hold its own work
            continue
        if not front.worked:
            # None of its own work read: its reply may be another's text too, unless
            # that output never reached its own caller, one holding the same id
            # (`rules.streams._astray`).
            owner = work.parent_span
            if owner is not None and _same_id(owner, front) and not owner.closed:
                state.pending_fronts.append(front)
                continue
            if owner is None or not _same_id(owner, front) or (
                    owner.outcome == OUTCOME_OK and owner.fp_out == work.fp_out):
                front.crossed_done = True
                continue
        front.crossed_done = True
        detail = crossed_detail(front.span_id, front.fp_in, front.fp_out, work.span_id,
                                work.fp_in, work.request_id, work.x_request_id)
        proof = [(front.file, front.first_line), (front.last_file, front.last_line),
                 (work.file, work.first_line), (work.last_file, work.last_line)]
        found.append(_finding("crossed_stream", front, front.last, detail, proof))
    return found


def _same_id(one: Span, other: Span) -> bool:
    """Two callers holding one request id or one client id (a legacy collision)."""
    return ((one.request_id is not None and one.request_id == other.request_id)
            or (one.x_request_id is not None and one.x_request_id == other.x_request_id))
