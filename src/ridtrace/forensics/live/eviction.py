"""Forgetting what left the live window (`WindowState.evict`).

Every span read is dropped here once: the forgetting is inline, with the indexes in
locals, as it costs as much per span as taking the span in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ridtrace.contract import WORKER

if TYPE_CHECKING:
    from ridtrace.forensics.live.spans import Span, SpanKey
    from ridtrace.forensics.live.window import WindowState


def read_up_to(state: WindowState) -> int:
    """The log time every file not read to its end (lines left, or a piece of one held)
    has been read up to, the latest time read when none: what a verdict taken as its
    spans leave the window rests on. A quiet file read to its end holds nothing back."""
    return min(state.unfinished.values(), default=state.watermark)


def window_cutoff(state: WindowState) -> int:
    """The log time before which a span with no line leaves the window."""
    # Up to where every file is read, not the latest time seen: a file read behind
    # the others (--from-start over app.jsonl.1 of the hour before, 32 MiB a poll)
    # had its spans dropped between two of its chunks, the lines of their requests
    # coming next poll, and its incidents across the cut were lost.
    behind = min(state.behind.values(), default=state.watermark)
    return min(state.watermark, behind) - state.window_us


def last_in_window(span: Span, limit: int, cutoff: int) -> int:
    """The time by which `span` stays in the window: its last line's, or, past `limit`,
    its start's."""
    last = span.last
    if last > limit:
        # A line stamped years ahead held the front for good: nothing behind it
        # left the window again. Such a span is as old as its start, or, stamped
        # ahead throughout, as old as its place in the arrival order.
        last = span.start if span.start <= limit else cutoff - 1
    return last


def clusters_leaving(state: WindowState) -> set[int]:
    """The pending duplicate verdicts (`id` of each cluster) that the next eviction
    would drop a member of."""
    cutoff, limit = window_cutoff(state), state.limit
    return {id(cluster) for cluster in state.pending_clusters
            if not cluster.reported
            and any(last_in_window(m, limit, cutoff) < cutoff for m in cluster.members)}


def fronts_leaving(state: WindowState) -> set[int]:
    """The pending crossed-stream verdicts (`id` of each caller) the next eviction would
    drop."""
    cutoff, limit = window_cutoff(state), state.limit
    return {id(front) for front in state.pending_fronts
            if not front.crossed_done and last_in_window(front, limit, cutoff) < cutoff}


def evict_outside(state: WindowState) -> int:
    """Drop spans with no line inside the window; returns how many were dropped."""
    cutoff = window_cutoff(state)
    spans, by_id, pairs, produced = state.spans, state.clusters, state.pairs, state.produced
    limit = state.limit
    dropped = 0
    # Callers whose crossed-stream verdict, and ids whose duplicate verdict, wait on
    # another file's progress.
    lagging = {id(front) for front in state.pending_fronts}
    waiting = {id(cluster) for cluster in state.pending_clusters if not cluster.reported}
    while spans:
        key, span = spans.popitem(last=False)
        last = span.last
        if last > limit:  # the rare case out of line: a call per span costs as much as a rule
            last = last_in_window(span, limit, cutoff)
        if last >= cutoff:  # inside the window: back to the front, and done
            spans[key] = span
            spans.move_to_end(key, last=False)
            break
        dropped += 1
        if (not span.closed or (lagging and id(span) in lagging and not span.crossed_done)
                or (waiting and any(id(cluster) in waiting for cluster in span.clusters))):
            # Still open at the window's edge, or a request whose crossed-stream or
            # duplicate verdict still waited on another file's progress: counted, not
            # judged (the last two were dropped without a word).
            state.open_at_edge += 1
        if not span.closed:
            up = span.parent_span
            if up is not None:
                # Its caller waited for it (its own work may still match what it was
                # delivered): a worker killed mid-request never ends, and the caller
                # it held was never judged, though `analyze` reports it crossed.
                up.open_children -= 1
                if up.closed and up.open_children <= 0:
                    state.pending_fronts.append(up)
        for cluster in span.clusters:
            members = cluster.members
            members.remove(span)
            if not members and by_id.get(cluster.request_id) is cluster:
                del by_id[cluster.request_id]
        fp_out = span.fp_out
        if fp_out is not None:
            if span.paired and span.fp_in is not None:
                pair = (span.fp_in, fp_out)
                if pairs[pair] > 1:
                    pairs[pair] -= 1
                else:
                    del pairs[pair]
            made = produced.get(fp_out)
            if made is not None and made.pop(id(span), None) is not None and not made:
                del produced[fp_out]
            if span.waiting:
                _unwait(state, span, fp_out)
        if span.side != WORKER:
            state.front_seen(key, -1)
        if span.parent_span is None and span.parent is not None:
            _unpark(state, (key[0], span.parent), span)
        span.closed = span.crossed_done = True  # gone: nothing pending waits for it
        span.parent_span = None
        span.clusters = ()
    return dropped


def _unpark(state: WindowState, parent: SpanKey, span: Span) -> None:
    kin = state.orphans.get(parent)
    if kin is not None and span in kin:
        kin.remove(span)
        if not kin:
            del state.orphans[parent]


def _unwait(state: WindowState, span: Span, fp_out: str) -> None:
    fronts = state.waiting.get(fp_out, [])
    if span in fronts:
        fronts.remove(span)
    if not fronts:
        state.waiting.pop(fp_out, None)
