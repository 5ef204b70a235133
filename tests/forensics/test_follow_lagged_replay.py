"""Live findings equal `analyze`'s of the final files, under lagging writers and rotations.

Fixed seeds of `tests.support.lagged_replay`: generated logs replayed with per-file
flush lags below the settle time, lines written in two pieces, per-file rotations, small
polls and polls slower than the settle time. Each seed here, before the fixes that
`test_follow_split_span` and `test_follow_unseen_file` pin down, missed or misnamed a
duplicate (5, 43) or printed one `analyze` does not report (77). Seeds 123 and 143
missed a crossed stream: the caller's worker span was first read by its middleware's
`request.start` line alone in a poll, linked as no worker's, and the caller was let go
as one whose own work was never read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.lagged_replay import replay


@pytest.mark.parametrize("seed", [5, 43, 77, 123, 143])
def test_live_prints_each_error_finding_of_analyze_once_and_nothing_else(
    tmp_path: Path, seed: int,
) -> None:
    live, batch = replay(tmp_path, seed, "synth")
    assert len(live) == len(set(live))  # each printed once
    assert sorted(live) == batch
