"""Worker spans read before their caller, moved to the cluster their caller belongs in.

A worker span read before its caller stands for the caller by its own start
(`WindowState.park`), and joins the request_id's cluster of callers that looked in flight
then: a worker's log flushed ahead of its frontend's, or a worker clock running behind.
Once the caller is read it may show it started only after every other holder of that
cluster had ended: `analyze` cuts the id's holders there, so its worker spans leave the
cluster and join the id's holders as the caller does. Left in, the earlier callers were
printed in the next callers' duplicate (named first, their lines cited), and once that
cluster was reported, the later callers' own duplicate was never printed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ridtrace.contract import WORKER
from ridtrace.forensics.live.spans import Cluster

if TYPE_CHECKING:  # the window calls in here as it links a caller
    from ridtrace.forensics.live.spans import Span
    from ridtrace.forensics.live.window import WindowState


def regroup(state: WindowState, kids: list[Span]) -> None:
    """Move `kids`, just linked to their caller, out of clusters it was not part of."""
    if not kids or kids[0].holder() is kids[0]:
        return  # their parent works for another span: it stands for no caller of its own
    start = kids[0].holder().start
    key = kids[0].caller_key()
    for cluster in {id(c): c for kid in kids for c in kid.clusters}.values():
        if not _ended_before(cluster, key, start):
            continue
        # With them go the spans read early that start later still (other callers'
        # workers): beside none of the cluster's ended callers either.
        moved = [m for m in cluster.members
                 if m.caller_key() == key or _unplaced(m.holder(), start)]
        for kid in moved:
            cluster.members.remove(kid)
            kid.clusters.remove(cluster)  # type: ignore[union-attr]  # non-empty: a list
        cluster.max_end = max((m.holder().last for m in cluster.members), default=0)
        rid = cluster.request_id
        if state.clusters.get(rid) is cluster:
            # The id's holders from the caller on, as `WindowState.join` starts them; not
            # joined through it: a span read early and still open (another caller's
            # worker, judged when its own caller comes) kept them beside the old ones.
            fresh = Cluster(rid, moved, max(kid.holder().last for kid in moved))
            fresh.previous, cluster.previous = cluster, None
            state.clusters[rid] = fresh
            for kid in moved:
                kid.clusters = [*kid.clusters, fresh]
        else:
            for kid in moved:
                state.join(kid, rid)


def _ended_before(cluster: Cluster, key: tuple[str | None, str], start: int) -> bool:
    """Whether every holder of `cluster` but the caller `key` certainly ended by `start`.
    A span read before its own caller and starting later is judged when its caller comes.

    Newest first: a holder still in flight is most likely among the last to join, and one
    id reused back to back (each request overlapping the next) keeps one cluster of
    them all, which oldest first walked whole for every caller read after its worker.
    """
    others = False
    for m in reversed(cluster.members):
        if m.caller_key() == key:
            continue
        held = m.holder()
        if _unplaced(held, start):
            continue
        if not held.closed or held.last > start:
            return False
        others = True
    return others


def _unplaced(held: Span, start: int) -> bool:
    """A worker span standing for a caller not read yet, started at or after `start`."""
    return held.side == WORKER and held.parent_span is None and held.start >= start
