"""InflightRegistry: conflicts, release on every outcome, legacy replacement, counters."""

from __future__ import annotations

import asyncio

import pytest

from ridtrace.frontend_plugin import DROPPED, DuplicateRequestId, InflightRegistry


def _channel() -> asyncio.Queue[object]:
    return asyncio.Queue()


def test_safe_refuses_a_duplicate_and_leaves_the_first_caller_alone() -> None:
    registry = InflightRegistry()
    first, second = _channel(), _channel()
    entry = registry.register("k", first)
    with pytest.raises(DuplicateRequestId) as info:
        registry.register("k", second)
    assert info.value.status_code == 409 and info.value.key == "k"
    assert registry.claim("k") is entry and entry.channel is first
    assert first.empty()  # not signalled in any way
    assert registry.counters()["conflicts"] == 1 and len(registry) == 1


def test_release_only_frees_the_callers_own_entry() -> None:
    registry = InflightRegistry()
    mine, other = _channel(), _channel()
    registry.register("k", mine)
    assert registry.release("k", other) is False
    assert "k" in registry
    assert registry.release("k", mine) is True
    assert registry.release("k", mine) is False  # idempotent
    registry.register("k", other)  # the id is accepted again once freed
    assert len(registry) == 1


def test_legacy_replaces_and_tells_the_displaced_caller() -> None:
    registry = InflightRegistry("legacy")
    first, second = _channel(), _channel()
    registry.register("k", first)
    registry.register("k", second)
    assert first.get_nowait() is DROPPED
    # A response stream takes whichever caller holds the key now, and removes it.
    entry = registry.claim("k")
    assert entry is not None and entry.channel is second
    assert registry.claim("k") is None  # the second response is unlinked
    assert registry.release("k", first) is False
    counters = registry.counters()
    assert counters["replaced"] == 1 and counters["unlinked"] == 1 and counters["inflight"] == 0


def test_unknown_policy_is_refused() -> None:
    with pytest.raises(ValueError):
        InflightRegistry("sloppy")  # type: ignore[arg-type]


def test_empty_after_a_mix_of_outcomes_including_cancelled_tasks() -> None:
    registry = InflightRegistry()

    async def caller(i: int, hold: asyncio.Event, gate: asyncio.Event) -> str:
        channel = _channel()
        registry.register(f"id-{i}", channel)
        try:
            await hold.wait()  # every caller is in flight before any outcome
            if i % 4 == 0:
                await gate.wait()  # cancelled below while waiting
            if i % 4 == 1:
                raise RuntimeError("boom")
            if i % 4 == 2:
                await asyncio.wait_for(gate.wait(), 0.001)
            return "ok"
        finally:
            registry.release(f"id-{i}", channel)

    async def main() -> list[object]:
        hold, gate = asyncio.Event(), asyncio.Event()
        tasks = [asyncio.create_task(caller(i, hold, gate)) for i in range(200)]
        await asyncio.sleep(0)
        assert len(registry) == 200
        hold.set()
        await asyncio.sleep(0.01)
        for task in tasks[::4]:
            task.cancel()
        return await asyncio.gather(*tasks, return_exceptions=True)

    outcomes = asyncio.run(main())
    kinds = {type(o).__name__ for o in outcomes}
    assert kinds == {"CancelledError", "RuntimeError", "TimeoutError", "str"}
    assert len(registry) == 0
    assert registry.counters()["released"] == 200
