"""Whose work a crossed caller was delivered, when several workers produced that output.

Identical prompts (retries, canned prompts) give identical replies: the output a caller
got was often produced by several finished worker spans. The one named is the one that
could have reached the caller, the last to start no later than the caller's end (a
concurrent twin, not a bystander that finished seconds before it began), whatever order
the logs were read in; with none (clocks that disagree), the first to start.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["reaching_producers"]


def reaching_producers(
    out: np.ndarray, start: np.ndarray, name: Sequence[str | None],
    wanted: np.ndarray, by: np.ndarray,
) -> np.ndarray:
    """For each query (output code `wanted`, caller end `by`, epoch µs), the index of the
    candidate (output code `out`, start `start`, span id `name` for ties) that produced
    it and started last no later than `by`, or the first to start when none did; -1 for
    an output no candidate produced. Vectorised: sorted once, one binary search each."""
    out = np.asarray(out, dtype=np.int64)
    start = np.asarray(start, dtype=np.int64)
    wanted = np.asarray(wanted, dtype=np.int64)
    if not len(out) or not len(wanted):
        return np.full(len(wanted), -1, dtype=np.int64)
    named = np.unique(np.asarray([n or "" for n in name], dtype=object), return_inverse=True)[1]
    order = np.lexsort((named, start, out))
    sorted_out, sorted_start = out[order], start[order]
    # One number per (output, start) that keeps the sort: an output's code, then the
    # rank of its start among all the candidates' starts.
    starts = np.unique(sorted_start)
    width = np.int64(len(starts) + 1)
    key = sorted_out * width + np.searchsorted(starts, sorted_start)
    first = np.searchsorted(sorted_out, wanted, side="left")
    last_started = np.searchsorted(starts, np.asarray(by, dtype=np.int64), side="right") - 1
    at = np.searchsorted(key, wanted * width + last_started, side="right") - 1
    at = np.where(at >= first, at, first)
    found = (first < len(sorted_out)) & (sorted_out[np.minimum(first, len(sorted_out) - 1)]
                                          == wanted)
    return np.where(found, order[np.minimum(at, len(order) - 1)], -1)
