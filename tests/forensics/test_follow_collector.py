"""`PollCollector`: the follower's schedule for the cycle collector."""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path
from typing import Any

from ridtrace.forensics.live.collector import FULL_EVERY_S, PollCollector
from ridtrace.forensics.live.follow import Follower, FollowSettings
from tests.forensics.helpers import rt_request


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def _cycle() -> weakref.ref[_Node]:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_a_poll_runs_without_the_collector_and_its_cycles_are_freed_after_it() -> None:
    assert gc.isenabled()
    with PollCollector() as collector:
        assert not gc.isenabled()
        made = _cycle()
        assert made() is not None  # nothing collects inside a poll
        collector.after_poll()
        assert made() is None
        assert not gc.isenabled()
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_survivors_are_frozen_until_the_full_collection_a_minute_later() -> None:
    now = [0.0]
    with PollCollector(clock=lambda: now[0]) as collector:
        a, b = _Node(), _Node()
        collector.after_poll()
        assert gc.get_freeze_count() > 0  # a and b survived the poll: left out from now on
        a.other, b.other = b, a  # a cycle among frozen objects, then garbage
        gone = weakref.ref(a)
        del a, b
        now[0] = FULL_EVERY_S / 2
        collector.after_poll()
        assert gone() is not None  # a per-poll pass does not walk frozen objects
        now[0] = FULL_EVERY_S + 1
        collector.after_poll()
        assert gone() is None
    assert gc.get_freeze_count() == 0


def test_leaving_restores_a_disabled_collector_as_it_was() -> None:
    gc.disable()
    try:
        with PollCollector() as collector:
            collector.after_poll()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_follower_polls_on_this_schedule_and_leaves_the_collector_as_it_was(
    tmp_path: Path,
) -> None:
    # Two overlapping requests under one id: a finding, handed over between polls.
    lines = rt_request("a", "7", 0, 3) + rt_request("b", "7", 1, 2)
    (tmp_path / "frontend.jsonl").write_text("\n".join(sorted(lines, key=_time)) + "\n")
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True))
    follower.start()
    seen: list[tuple[str, bool, int]] = []

    def on_finding(finding: dict[str, Any]) -> bool:
        seen.append((finding["kind"], gc.isenabled(), gc.get_freeze_count()))
        return True

    try:
        follower.run(on_finding, stop=lambda: True)
    finally:
        follower.close()
    assert len(seen) == 1
    kind, enabled, frozen = seen[0]
    assert (kind, enabled) == ("duplicate_in_flight", False)
    assert frozen > 0  # what the poll left alive is out of later passes
    assert gc.isenabled() and gc.get_freeze_count() == 0


def _time(line: str) -> str:
    return str(json.loads(line)["time"])
