"""A span known to hold its request_id longer than first read: the id's clusters again.

`LiveRules` judges an id's holders by the times read so far. A span's earlier part read
behind its later lines, or a later line past its last one, stretches its hold on the
id: the clusters it is in are judged again, and it joins the id's latest cluster when
it now overlaps it. Both are rare (rotated parts, a late error line), so they live
apart from the per-row pass.
"""

from __future__ import annotations

from ridtrace.forensics.live.spans import Cluster, Span
from ridtrace.forensics.live.window import WindowState


def earlier_part(state: WindowState, span: Span, t0: int) -> list[Cluster]:
    """A span's lines from before those read so far, in another file read behind
    (``--from-start`` over a rotated ``app.jsonl.1`` and the live ``app.jsonl``):
    it started then, as the batch read merges it. Its clusters are judged again, and
    it joins the id's latest cluster it now overlaps. Kept at the start of its later
    lines, a caller in flight with the next holder of its id looked one after it."""
    span.start = t0
    rid = span.request_id
    latest = state.clusters.get(rid) if rid is not None else None
    if (rid is not None and latest is not None and latest not in span.clusters
            and t0 < latest.max_end):
        state.join(span, rid)
    return [cluster for cluster in span.clusters if len(cluster.members) > 1]


def held_longer(state: WindowState, span: Span, rid: str) -> list[Cluster]:
    """The id's later holders, judged apart, that `span` now overlaps: a later line
    (the legacy policy's Unlinked error after `request.end`) holds the id longer, as
    `analyze` reads it, and a caller that took the id in between is a duplicate."""
    later = state.clusters.get(rid)
    if later is None or later in span.clusters or not later.members:
        return []
    # A worker span's later line holds nothing longer than its caller does.
    if min(m.holder().start for m in later.members) >= span.holder().last:
        return []
    joined = state.join(span, rid)
    return [joined] if len(joined.members) > 1 else []
