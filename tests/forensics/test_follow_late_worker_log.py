"""A worker log flushed behind its frontend's: each duplicate printed once, and every one.

From a demo's legacy run (`data/late-worker-legacy`): two callers held client id
`rollout-9` at once, their worker spans logged after both had ended in error, and two
later callers held the id one after the other. Followed with the worker's log half a
second behind the frontend's (inside the settle time), a worker span read late joined
the id's latest cluster rather than its own caller's: the duplicate was printed twice,
and on a busier log another cluster's duplicate was never printed (`analyze` of the same
files reports each once).
"""

from __future__ import annotations

import collections
from datetime import datetime
from pathlib import Path

from tests.support.lagged_replay import batch_errors, follow_copies, key

_DATA = Path(__file__).parent / "data" / "late-worker-legacy"
_LAST = datetime.fromisoformat("2026-12-06T02:57:33+00:00").timestamp()


def test_a_late_worker_log_neither_repeats_nor_hides_a_duplicate(tmp_path: Path) -> None:
    # The worker's log half a second behind the frontend's: inside the settle time.
    live = follow_copies(tmp_path, _DATA, ["frontend.jsonl", "worker.jsonl"], _LAST, lag_s=0.5)
    batch = batch_errors(tmp_path)
    assert [k for k in batch if k[0] == "duplicate_in_flight"] == [
        ("duplicate_in_flight", "ffa63087be73a8f5", "rollout-9")]
    printed = collections.Counter(map(key, live))
    assert sorted(printed) == batch and set(printed.values()) == {1}, printed
