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
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

from ridtrace.forensics.live.follow import Follower, FollowSettings
from tests.support.lagged_replay import Ticks, batch_errors, key

_DATA = Path(__file__).parent / "data" / "late-worker-legacy"
_LAST = datetime.fromisoformat("2026-12-06T02:57:33+00:00").timestamp()


def test_a_late_worker_log_neither_repeats_nor_hides_a_duplicate(tmp_path: Path) -> None:
    for name in ("frontend.jsonl", "worker.jsonl"):
        (tmp_path / name).write_text("")
    ticks = Ticks()
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, settle_s=1.0),
                        ticks=ticks, clock=lambda: _LAST + ticks.now - 100.0)
    live: list[Any] = []
    try:
        follower.start()
        for name in ("frontend.jsonl", "worker.jsonl"):
            shutil.copyfile(_DATA / name, tmp_path / name)
            ticks.now += 0.5  # the worker's log half a second behind: inside the settle
            live.extend(follower.poll()[0])
        ticks.now += 5.0
        live.extend(follower.poll()[0])
        follower.run(lambda finding: live.append(finding) or True, stop=lambda: True)
    finally:
        follower.close()
    batch = batch_errors(tmp_path)
    assert [k for k in batch if k[0] == "duplicate_in_flight"] == [
        ("duplicate_in_flight", "ffa63087be73a8f5", "rollout-9")]
    printed = collections.Counter(map(key, live))
    assert sorted(printed) == batch and set(printed.values()) == {1}, printed
