"""The seed's reproduction, scaled: 300 concurrent requests on six routes sharing 3 ids.

Workers start with a closed gate: every request waits before its first token until the
test has seen all 300 registered in the frontend, so the overlap is certain rather than
likely. Then the gates open and every answer is checked.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.frontend_plugin.conftest import Stack, start_stack
from tests.frontend_plugin.traffic import (
    COLLIDING_CLIENT_IDS,
    ROUTES,
    Result,
    start_colliding_calls,
)

N = 300
CLIENT_IDS = COLLIDING_CLIENT_IDS


CLIENTS = 10
"""The callers' httpx clients, each call made by the next in turn: one client's pool, on
every request added or ended, counts its connections once per idle one (quadratic),
which for 300 connections in one pool cost ~2 CPU-s a run. Each call still has a
connection of its own, all 300 open at once."""


class _CallersClients:
    """`CLIENTS` clients in turn, as the one client `start_colliding_calls` posts with."""

    def __init__(self, clients: list[httpx.AsyncClient]) -> None:
        self._next = itertools.cycle(clients)

    async def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return await next(self._next).post(url, **kwargs)


async def _fire(stack: Stack) -> list[Result]:
    limits = httpx.Limits(max_connections=N + 10, max_keepalive_connections=N + 10)
    async with contextlib.AsyncExitStack() as opened:
        clients = [await opened.enter_async_context(httpx.AsyncClient(limits=limits, timeout=60))
                   for _ in range(CLIENTS)]
        tasks = start_colliding_calls(_CallersClients(clients), stack.url, N)
        # Every request is registered before any worker produces a token.
        await asyncio.to_thread(
            stack.wait_inflight, lambda s: s["registered"] >= N, timeout=60
        )
        snapshot = stack.inflight()
        await asyncio.to_thread(stack.open_gates)
        results = await asyncio.gather(*tasks)
    results_snapshot.append(snapshot)
    return list(results)


results_snapshot: list[dict[str, object]] = []


def _analyze(logs: Path) -> tuple[int, dict[str, object]]:
    """`ridtrace analyze` on the stack's log files, as an operator would run it (in-process:
    its report and exit code are click's, and a process of its own cost ~2 CPU-s of
    pandas and DuckDB imports)."""
    done = CliRunner().invoke(
        main, ["analyze", *sorted(map(str, logs.glob("*.jsonl"))), "--format", "json"])
    assert done.exception is None or isinstance(done.exception, SystemExit), done.output
    return done.exit_code, json.loads(done.stdout)["summary"]


def _worker_lines(
    stack: Stack, *, ends: int, timeout: float = 30.0
) -> tuple[dict[str, dict[str, object]], dict[str, dict[str, object]]]:
    """The workers' worker.start and worker.end lines by request id, once ``ends``
    worker.end lines are written (or the deadline passed)."""
    deadline = time.monotonic() + timeout
    while True:
        starts, finished = {}, {}
        for worker in stack.workers:
            for line in worker.lines():
                if line.get("event") == "worker.start":
                    starts[str(line["request_id"])] = line
                elif line.get("event") == "worker.end":
                    finished[str(line["request_id"])] = line
        if len(finished) >= ends or time.monotonic() > deadline:
            return starts, finished
        time.sleep(0.02)


def _stack(tmp_path: Path, policy: str):  # type: ignore[no-untyped-def]
    worker = ["--gate", "--token-delay", "0.002", "--id-policy", policy]
    return start_stack(tmp_path, workers=[worker, worker], frontend=["--id-policy", policy])


def test_safe_policy_every_caller_gets_its_own_output(tmp_path: Path) -> None:
    with _stack(tmp_path, "safe") as stack:
        results = asyncio.run(_fire(stack))
        held = results_snapshot[-1]
        assert held["inflight"] == N, held  # all 300 were in flight at the same time
        for result in results:
            assert result.own, result
        assert {(r.route, r.stream) for r in results} == {(r, s) for r in ROUTES for s in (True, False)}
        after = stack.wait_inflight(lambda s: s["inflight"] == 0, timeout=10)
        assert after["registered"] == after["released"] == N
        assert after["conflicts"] == after["replaced"] == 0

        # Logs: every frontend request.end pairs with a worker.end by request_id, the
        # worker lines carry the frontend's ids, and the fingerprints agree.
        ends = {
            line["request_id"]: line for line in stack.frontend.lines()
            if line.get("event") == "request.end" and line.get("endpoint")
        }
        assert len(ends) == N
        # A worker writes worker.end as its reply ends and the line goes out at its loop's
        # next turn, in another process than the frontend whose answer the test has: wait
        # for the N lines (a condition with a deadline), then compare them all.
        starts, finished = _worker_lines(stack, ends=N)
        assert set(starts) == set(finished) == set(ends)
        for rid, end in ends.items():
            start, done = starts[rid], finished[rid]
            assert end["outcome"] == "ok" and end["status"] == 200
            assert start["trace_id"] == end["trace_id"]
            assert start["parent_span_id"] == end["span_id"]
            assert start["x_request_id"] == end["x_request_id"] in CLIENT_IDS
            assert start["fp_in"] == end["fp_in"]
            assert done["fp_out"] == end["fp_out"]
            assert done["outcome"] == "ok"
            assert end["id_policy"] == "safe" and end["attempts"] == 1
    # The logs alone prove it: no crossed stream, no duplicate in flight, nothing unlinked.
    code, summary = _analyze(tmp_path)
    assert code == 0, summary
    assert summary["crossed_stream"] == summary["duplicate_in_flight"] == summary["unlinked"] == 0
    assert summary["incomplete"] is False


def test_legacy_policy_reproduces_the_failure(tmp_path: Path) -> None:
    with _stack(tmp_path, "legacy") as stack:
        results = asyncio.run(_fire(stack))
        held = results_snapshot[-1]
        # Keyed by 3 client ids: 297 registrations displaced someone else's.
        assert held["replaced"] == N - len(CLIENT_IDS), held
        not_own = [r for r in results if not r.own]
        unlinked = [r for r in not_own
                    if r.status == 500 and "Unlinked request" in (r.error or "")]
        assert len(unlinked) == N - len(CLIENT_IDS)
        assert len(not_own) >= N - len(CLIENT_IDS)
        stack.wait_inflight(lambda s: s["detached_pumps"] == 0, timeout=20)
        messages = [line["message"] for line in stack.frontend.lines()]
        assert "Unlinked response; response task was dropped or cancelled" in messages
        assert "Unlinked request; initiating request task was dropped or cancelled" in messages
    # ... and analyze finds the incident in those logs (exit 1).
    code, summary = _analyze(tmp_path)
    assert code == 1, summary
    assert summary["unlinked"] and summary["duplicate_in_flight"], summary


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__, "-q"])


@pytest.fixture(scope="module")
def one_worker_stack(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[[str], Stack]]:
    """The stack of one worker under an id policy, started the first time a test asks for
    it and shared by the module's tests of that policy (each ~1 CPU-s of process starts):
    they send requests of their own and read only the log lines written after they began."""
    with contextlib.ExitStack() as running:
        started: dict[str, Stack] = {}

        def stack_of(policy: str) -> Stack:
            if policy not in started:
                started[policy] = running.enter_context(start_stack(
                    tmp_path_factory.mktemp(f"one-worker-{policy}"),
                    workers=[["--id-policy", policy]], frontend=["--id-policy", policy]))
            return started[policy]

        yield stack_of


def _written_from_now(stack: Stack) -> Callable[[dict[str, object]], bool]:
    """Whether a frontend log line is one written after this call (not an earlier test's:
    each waits for the last line of its requests before it ends)."""
    earlier = stack.frontend.lines()
    return lambda line: line not in earlier


def test_legacy_policy_keys_a_repeated_header_by_its_first_value(
    one_worker_stack: Callable[[str], Stack],
) -> None:
    # The middleware echoes and logs a repeated x-request-id's first value; the legacy
    # key (and so request_id and the reply's id) took the last: one request, two ids.
    stack = one_worker_stack("legacy")
    written_here = _written_from_now(stack)
    answer = httpx.post(
        stack.url + "/v1/chat/completions",
        headers=[("x-request-id", "first-id"), ("x-request-id", "second-id")],
        json={"model": "echo", "messages": [{"role": "user", "content": "hi"}]},
        timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.headers.get_list("x-request-id") == ["first-id"]
    assert answer.json()["id"] == "chatcmpl-first-id"
    (end,) = stack.frontend.wait_for_lines(
        lambda line: written_here(line) and line.get("event") == "request.end"
        and line.get("route") == "/v1/chat/completions", 1)
    assert (end["request_id"], end["x_request_id"]) == ("first-id", "first-id")
    # A first value that is no id (not ASCII) is passed over by the middleware,
    # which logs and echoes the second: the key took none and minted one.
    answer = httpx.post(
        stack.url + "/v1/chat/completions",
        headers=[("x-request-id", b"\xff"), ("x-request-id", "valid-id")],
        json={"model": "echo", "messages": [{"role": "user", "content": "hi"}]},
        timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.headers.get_list("x-request-id") == ["valid-id"]
    assert answer.json()["id"] == "chatcmpl-valid-id"
    (end,) = stack.frontend.wait_for_lines(
        lambda line: line.get("event") == "request.end"
        and line.get("x_request_id") == "valid-id", 1)
    assert end["request_id"] == "valid-id"


@pytest.mark.parametrize("policy", ["safe", "legacy"])
def test_the_deprecation_warn_says_what_the_policy_does_with_the_header(
    one_worker_stack: Callable[[str], Stack], policy: str
) -> None:
    # The legacy policy keys the request by x-dynamo-request-id, as the pre-fix frontend
    # did, and its WARN said "ignoring deprecated client request id header".
    stack = one_worker_stack(policy)
    written_here = _written_from_now(stack)
    answer = httpx.post(
        stack.url + "/v1/chat/completions", headers={"x-dynamo-request-id": "dyn-77"},
        json={"model": "echo", "messages": [{"role": "user", "content": "hi"}]},
        timeout=30)
    assert answer.status_code == 200, answer.text
    (warned,) = stack.frontend.wait_for_lines(
        lambda line: written_here(line) and line.get("event") == "deprecated_header", 1)
    # Its last line, written before the next test on the shared stack begins.
    stack.frontend.wait_for_lines(
        lambda line: written_here(line) and line.get("event") == "request.end", 1)
    assert warned["header"] == "x-dynamo-request-id" and warned["level"] == "WARN"
    if policy == "legacy":
        assert answer.json()["id"] == "chatcmpl-dyn-77"
        assert warned["message"] == ("deprecated client request id header used as the "
                                     "request id (legacy id policy)")
    else:
        assert answer.json()["id"] != "chatcmpl-dyn-77"
        assert warned["message"] == "ignoring deprecated client request id header"
