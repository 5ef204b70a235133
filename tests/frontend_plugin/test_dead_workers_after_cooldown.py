"""Workers that stay dead past their cooldown never cost a caller its answer.

Once a dead worker's cooldown ended it was back in plain round-robin rotation: with
three dead workers of five, a request whose order began with them spent its three
attempts on them and got 502 "worker unavailable" while two healthy workers sat idle,
every cooldown for as long as the dead workers stayed configured.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from ridtrace.frontend_plugin import WorkerPool
from tests.frontend_plugin.conftest import Stack, start_stack
from tests.support.servers import free_port


@contextlib.contextmanager
def _beside_dead_workers(
    tmp_path: Path, *, cooldown: str
) -> Iterator[tuple[Stack, httpx.Client, list[str]]]:
    """A frontend with one live worker and, after it, four dead ones (nothing listens
    there), each down for `cooldown` seconds once it fails; a client; the dead URLs."""
    dead = [f"http://127.0.0.1:{free_port()}" for _ in range(4)]
    flags = [arg for url in dead for arg in ("--worker", url)]
    env = {"RIDTRACE_FRONTEND_DOWN_COOLDOWN": cooldown}
    with start_stack(tmp_path, workers=[[]], frontend=flags, env=env) as stack, \
            httpx.Client(timeout=30) as client:
        yield stack, client, dead


def test_after_a_cooldown_one_suspect_is_probed_per_request_before_the_healthy() -> None:
    now = [0.0]
    pool = WorkerPool(("a", "b", "c", "d", "e"), cooldown=5.0, clock=lambda: now[0])
    for url in "abc":
        pool.mark_down(url)
    for _ in range(10):  # within the cooldown: the healthy first, whatever the cursor
        assert pool.order()[:2] in (["d", "e"], ["e", "d"])
    now[0] = 6.0
    probes = []
    for _ in range(10):
        order = pool.order()
        # At most one suspect before the healthy ones, in every order.
        assert sum(url in "abc" for url in order[:3]) <= 1, order
        if order[0] in "abc":
            probes.append(order[0])
    assert sorted(probes) == ["a", "b", "c"]  # each probed once in its cooldown
    pool.mark_up("b")  # a probe answered: b is healthy again
    assert all("b" in pool.order()[:3] for _ in range(5))


def test_every_request_is_answered_while_dead_workers_cool_down_again_and_again(
    tmp_path: Path,
) -> None:
    with _beside_dead_workers(tmp_path, cooldown="0.2") as (stack, client, dead):
        deadline = time.monotonic() + 60

        def failed_per_dead_worker() -> int:
            retries = [x for x in stack.frontend.lines() if x.get("event") == "dispatch.retry"]
            return min(sum(x.get("worker") == url for x in retries) for url in dead)

        def requests_until(failures: int) -> list[int]:
            statuses = []
            while failed_per_dead_worker() < failures:
                assert time.monotonic() < deadline, statuses[-20:]
                answer = client.post(stack.url + "/v1/completions",
                                     json={"model": "m", "prompt": "hi", "max_tokens": 2})
                statuses.append(answer.status_code)
            return statuses

        # Until each is known dead (before, the frontend knows no worker is: a request
        # may meet three of them first), then until six cooldowns ended for each.
        requests_until(1)
        statuses = requests_until(7)
        assert set(statuses) == {200}, [s for s in statuses if s != 200]


def test_dead_workers_that_refuse_connections_cost_no_answer_at_a_cold_start(
    tmp_path: Path,
) -> None:
    # Before any worker is known dead, the round-robin order of the second request is
    # three dead workers first: three refused connections took its three attempts (502).
    with _beside_dead_workers(tmp_path, cooldown="600") as (stack, client, dead):
        statuses = [
            client.post(stack.url + "/v1/completions",
                        json={"model": "m", "prompt": "hi", "max_tokens": 2}).status_code
            for _ in range(5)  # one starting at each place in the round-robin
        ]
        assert statuses == [200] * 5
        retries = [x for x in stack.frontend.lines() if x.get("event") == "dispatch.retry"]
        # Each dead worker was met and marked down once, then tried last.
        assert sorted(x["worker"] for x in retries) == sorted(dead)
        assert {x["reason"] for x in retries} == {"connect"}
