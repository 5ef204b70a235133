"""`ridtrace analyze --follow` watching a real frontend and real workers as they log.

Workers start gated: every request is held before its first token until the test has
seen them all in flight, so the colliding ids overlap for certain. The follower is a
real subprocess started before the traffic (it reads from the end of the logs).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cli.helpers import analyze_json
from tests.frontend_plugin.conftest import Stack, start_stack
from tests.frontend_plugin.traffic import (
    COLLIDING_CLIENT_IDS,
    Result,
    start_colliding_calls,
)
from tests.support.follower import FollowProcess, start_follower

N = 60
CLIENT_IDS = COLLIDING_CLIENT_IDS


def _stack(tmp_path: Path, policy: str):  # type: ignore[no-untyped-def]
    worker = ["--gate", "--token-delay", "0.002", "--id-policy", policy]
    return start_stack(tmp_path, workers=[worker, worker], frontend=["--id-policy", policy])


def _worker_starts(stack: Stack) -> int:
    return sum(
        1 for worker in stack.workers for line in worker.lines()
        if line.get("event") == "worker.start"
    )


async def _fire(stack: Stack, seen: dict[str, float]) -> list[Result]:
    limits = httpx.Limits(max_connections=N + 10, max_keepalive_connections=N + 10)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:
        tasks = start_colliding_calls(client, stack.url, N)
        await asyncio.to_thread(stack.wait_inflight, lambda s: s["registered"] >= N, timeout=60)
        # The lines that prove the duplicates: every worker has logged its start.
        deadline = time.monotonic() + 30
        while _worker_starts(stack) < N and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        seen["starts_written"] = time.monotonic()
        await asyncio.to_thread(stack.open_gates)
        results = await asyncio.gather(*tasks)
        seen["responses_done"] = time.monotonic()
    return list(results)


def _batch_findings(log_dir: Path) -> list[dict[str, object]]:
    # The reference batch read, in-process (tests/cli/helpers): not what is under test.
    return list(analyze_json(str(log_dir))[1]["findings"])


@dataclass
class LegacyRun:
    """One legacy-policy stack's traffic, followed live from the end of its logs."""

    log_dir: Path
    follower: FollowProcess
    code: int
    truth: list[dict[str, object]]  # the batch report's findings, read while it ran
    crossed: set[object]
    live_crossed: set[object]


def _live_crossed(follower: FollowProcess) -> set[object]:
    return {p.json()["span_id"] for p in follower.findings()
            if p.json()["kind"] == "crossed_stream"}


@pytest.fixture(scope="module")
def legacy_run(tmp_path_factory: pytest.TempPathFactory) -> LegacyRun:
    """One stack for both legacy tests: its logs, once the traffic is done, are what
    test_live_and_batch_cite_the_same_lines reads from the start (it ran a stack of
    its own for the same traffic)."""
    tmp_path = tmp_path_factory.mktemp("legacy")
    with _stack(tmp_path, "legacy") as stack:
        follower = start_follower([str(tmp_path)])
        try:
            seen: dict[str, float] = {}
            results = asyncio.run(_fire(stack, seen))
            assert [r for r in results if not r.own], "legacy policy must cross or fail streams"
            # Pumps detached from their caller finish (and log their worker's end) later.
            stack.wait_inflight(lambda s: s["detached_pumps"] == 0, timeout=20)

            # Duplicates are proven once the second worker start is written.
            def duplicates() -> set[str]:
                return {str(p.json()["request_id"]) for p in follower.findings()
                        if p.json()["kind"] == "duplicate_in_flight"}

            follower.wait_for(lambda: duplicates() == set(CLIENT_IDS), timeout=30,
                              what="a duplicate finding per client id")
            truth = _batch_findings(tmp_path)
            crossed = {f["span_id"] for f in truth if f["kind"] == "crossed_stream"}
            follower.wait_for(lambda: _live_crossed(follower) >= crossed, timeout=30,
                              what="every crossed stream the batch report finds")
        finally:
            code = follower.stop()
    return LegacyRun(tmp_path, follower, code, truth, crossed, _live_crossed(follower))


def test_legacy_collisions_reported_live(legacy_run: LegacyRun) -> None:
    follower, truth = legacy_run.follower, legacy_run.truth
    printed = follower.findings()
    # How soon a finding follows its line is measured in benchmarks/bench_follow.py
    # (docs/performance.md, *Live detection*), not bounded here: a timed test fails
    # on a busy CI machine without any defect.
    keys = {(p.json()["kind"], p.json()["span_id"], p.json()["request_id"]) for p in printed}
    assert len(keys) == len(printed), [p.text for p in printed]  # none printed twice
    assert legacy_run.live_crossed == legacy_run.crossed  # none invented
    # The batch report proves the same incidents: every duplicate id, every unlinked caller.
    assert {f["request_id"] for f in truth if f["kind"] == "duplicate_in_flight"} == set(
        CLIENT_IDS
    )
    live_unlinked = {p.json()["span_id"] for p in printed if p.json()["kind"] == "unlinked"}
    batch_unlinked = {f["span_id"] for f in truth if f["kind"] == "unlinked"}
    assert live_unlinked and live_unlinked <= batch_unlinked
    assert legacy_run.code == 1  # error findings were printed
    summary = follower.summary()
    assert summary["errors"] == len(printed)


def test_safe_policy_nothing_reported(tmp_path: Path) -> None:
    with _stack(tmp_path, "safe") as stack:
        follower = start_follower([str(tmp_path)])
        try:
            seen: dict[str, float] = {}
            results = asyncio.run(_fire(stack, seen))
            assert all(r.own for r in results), [r for r in results if not r.own]
            stack.wait_inflight(lambda s: s["inflight"] == 0, timeout=10)
        finally:
            # The round after the signal reads everything already written.
            code = follower.stop()
    summary = follower.summary()
    assert follower.findings() == []
    assert code == 0
    assert summary["errors"] == 0
    # Every request was read: a frontend span and a worker span each.
    assert summary["spans"] >= 2 * N


def _key(finding: dict[str, object]) -> tuple[str, str]:
    return str(finding["kind"]), str(finding["span_id"])


def _as_live_sees_it(finding: dict[str, Any]) -> dict[str, Any]:
    """A batch finding without what only the batch judges: worker output that no caller
    was delivered, added to its caller's Unlinked error (docs/cli.md)."""
    detail = str(finding["detail"])
    if finding["kind"] != "unlinked" or "; worker span " not in detail:
        return finding
    return {**finding, "detail": detail.split("; worker span ")[0],
            "evidence": [e for e in finding["evidence"]
                         if not Path(e["file"]).name.startswith("worker")]}


def test_live_and_batch_cite_the_same_lines(legacy_run: LegacyRun) -> None:
    # Live cited every span that held a duplicated id, so each caller's worker span added
    # its start and end to the caller's two lines: four lines a caller where `analyze` of
    # the same logs cites two (the caller's first and last). An Unlinked error cited its
    # line alone, without the request's last line beside it. The logs: the shared legacy
    # stack's, its traffic done and the stack stopped.
    tmp_path = legacy_run.log_dir
    follower = start_follower([str(tmp_path)], "--from-start")
    assert follower.stop() == 1  # reads what is written, then the summary
    live = sorted((p.json() for p in follower.findings()), key=_key)
    batch = [_as_live_sees_it(f) for f in _batch_findings(tmp_path)
             if f["severity"] == "error" and "that no caller received" not in str(f["detail"])]
    assert {f["request_id"] for f in batch if f["kind"] == "duplicate_in_flight"} == set(
        CLIENT_IDS
    )
    assert {f["kind"] for f in batch} == {"duplicate_in_flight", "unlinked", "crossed_stream"}
    assert live == sorted(batch, key=_key)
