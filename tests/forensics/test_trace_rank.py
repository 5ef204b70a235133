"""The trace view's ranking asks, for thousands of callers at once, whether each overlaps
another caller's hold on its id: the answer must be the one-by-one `overlapping`'s."""

from __future__ import annotations

import numpy as np
import pytest

from ridtrace.forensics.views.trace_rank import _overlapping_any, overlapping


@pytest.mark.parametrize("seed", range(40))
def test_overlaps_asked_at_once_match_asked_one_by_one(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    # Few distinct times, so ties of starts, ends and instants are common; a few spans
    # hold several times (worker spans standing for one caller).
    spans = np.array([f"s{i}" for i in rng.integers(0, max(1, n - n // 4), n)], dtype=object)
    starts = rng.integers(0, 12, n).astype(np.int64)
    ends = starts + rng.choice([0, 0, 1, 2, 5], n).astype(np.int64)
    holders = {"X": (spans, starts, ends)}
    q = int(rng.integers(1, 40))
    q_span = np.array([f"s{i}" for i in rng.integers(0, n + 3, q)], dtype=object)
    q_start = rng.integers(0, 12, q).astype(np.int64)
    q_end = q_start + rng.choice([0, 0, 1, 3], q).astype(np.int64)
    expected = [len(overlapping(holders, "X", str(s), int(a), int(b))) > 0
                for s, a, b in zip(q_span, q_start, q_end, strict=True)]
    got = _overlapping_any(holders, "X", q_span, q_start, q_end)
    assert got.tolist() == expected


def test_an_id_nobody_holds_overlaps_nothing() -> None:
    holders = {"X": (np.array(["a"], dtype=object), np.array([0]), np.array([5]))}
    got = _overlapping_any(holders, "Y", np.array(["b"], dtype=object), np.array([1]),
                           np.array([2]))
    assert got.tolist() == [False]
