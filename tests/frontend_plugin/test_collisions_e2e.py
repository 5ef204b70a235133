"""The seed's reproduction, scaled: 300 concurrent requests on six routes sharing 3 ids.

Workers start with a closed gate: every request waits before its first token until the
test has seen all 300 registered in the frontend, so the overlap is certain rather than
likely. Then the gates open and every answer is checked.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

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


async def _fire(stack: Stack) -> list[Result]:
    limits = httpx.Limits(max_connections=N + 10, max_keepalive_connections=N + 10)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:
        tasks = start_colliding_calls(client, stack.url, N)
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


def test_legacy_policy_keys_a_repeated_header_by_its_first_value(tmp_path: Path) -> None:
    # The middleware echoes and logs a repeated x-request-id's first value; the legacy
    # key (and so request_id and the reply's id) took the last: one request, two ids.
    with start_stack(tmp_path, workers=[["--id-policy", "legacy"]],
                     frontend=["--id-policy", "legacy"]) as stack:
        answer = httpx.post(
            stack.url + "/v1/chat/completions",
            headers=[("x-request-id", "first-id"), ("x-request-id", "second-id")],
            json={"model": "echo", "messages": [{"role": "user", "content": "hi"}]},
            timeout=30)
        assert answer.status_code == 200, answer.text
        assert answer.headers.get_list("x-request-id") == ["first-id"]
        assert answer.json()["id"] == "chatcmpl-first-id"
        (end,) = stack.frontend.wait_for_lines(
            lambda line: line.get("event") == "request.end"
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
    tmp_path: Path, policy: str
) -> None:
    # The legacy policy keys the request by x-dynamo-request-id, as the pre-fix frontend
    # did, and its WARN said "ignoring deprecated client request id header".
    with start_stack(tmp_path, workers=[["--id-policy", policy]],
                     frontend=["--id-policy", policy]) as stack:
        answer = httpx.post(
            stack.url + "/v1/chat/completions", headers={"x-dynamo-request-id": "dyn-77"},
            json={"model": "echo", "messages": [{"role": "user", "content": "hi"}]},
            timeout=30)
        assert answer.status_code == 200, answer.text
        (warned,) = stack.frontend.wait_for_lines(
            lambda line: line.get("event") == "deprecated_header", 1)
    assert warned["header"] == "x-dynamo-request-id" and warned["level"] == "WARN"
    if policy == "legacy":
        assert answer.json()["id"] == "chatcmpl-dyn-77"
        assert warned["message"] == ("deprecated client request id header used as the "
                                     "request id (legacy id policy)")
    else:
        assert answer.json()["id"] != "chatcmpl-dyn-77"
        assert warned["message"] == "ignoring deprecated client request id header"
