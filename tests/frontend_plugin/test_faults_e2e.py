"""Faults: a worker killed mid-run, 200 clients leaving mid-stream, hung and crossed workers."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import httpx

from tests.frontend_plugin.conftest import Stack, start_stack
from tests.frontend_plugin.traffic import ROUTES, Result, build, call, extract

LONG = " ".join(f"w{i}" for i in range(30))  # 31 tokens: streams outlive the fault


async def _stream_in_two_halves(
    client: httpx.AsyncClient, base: str, route: str, marker: str,
    first_seen: asyncio.Queue[None], resume: asyncio.Event,
) -> Result:
    """Read until the first text arrives, report it, wait for ``resume``, read the rest."""
    path, headers, body = build(route, marker, "kill-test", True)
    async with client.stream("POST", base + path, headers=headers, json=body) as response:
        if response.status_code != 200:
            await response.aread()
            text, error, _ = extract(route, False, response.content)
            first_seen.put_nowait(None)
            return Result(route, True, marker, response.status_code, text, error)
        raw = b""
        reported = False
        async for data in response.aiter_bytes():
            raw += data
            if not reported and b"echo" in raw:
                reported = True
                first_seen.put_nowait(None)
                await resume.wait()
        if not reported:
            first_seen.put_nowait(None)
    text, error, _ = extract(route, True, raw)
    return Result(route, True, marker, 200, text, error)


def test_worker_killed_mid_stream(tmp_path: Path) -> None:
    slow = ["--token-delay", "0.02"]
    with start_stack(tmp_path, workers=[slow, slow]) as stack:
        victim = stack.workers[0]

        async def main() -> tuple[list[Result], list[Result]]:
            first_seen: asyncio.Queue[None] = asyncio.Queue()
            resume = asyncio.Event()
            async with httpx.AsyncClient(timeout=30) as client:
                tasks = [
                    asyncio.create_task(_stream_in_two_halves(
                        client, stack.url, ROUTES[i % 6], f"kill-{i} {LONG}", first_seen, resume))
                    for i in range(24)
                ]
                for _ in tasks:  # every stream is running: first text delivered
                    await first_seen.get()
                os.killpg(victim.process.pid, signal.SIGKILL)
                victim.process.wait(5)
                resume.set()
                during = await asyncio.gather(*tasks)
                after = await asyncio.gather(*(
                    call(client, stack.url, ROUTES[i % 6], f"after-{i}", None, i % 2 == 0)
                    for i in range(12)
                ))
            return list(during), list(after)

        during, after = asyncio.run(main())
        broken = [r for r in during if not r.own]
        assert broken, "killing a worker mid-stream must cut some streams"
        assert len(broken) < len(during)  # the other worker's callers were unaffected
        for result in broken:
            # Nobody gets another caller's text: an explicit error, own prefix at most.
            assert result.error and "worker connection lost" in result.error, result
            assert "127.0.0.1" not in result.error, result  # no worker address to callers
        assert all(r.own for r in after), after  # the frontend keeps serving
        snap = stack.wait_inflight(lambda s: s["inflight"] == 0, timeout=10)
        assert any(not w["up"] for w in snap["workers"])  # type: ignore[attr-defined]


def test_200_clients_leaving_mid_stream_free_everything(tmp_path: Path) -> None:
    # Workers that stop after 2 tokens: every stream is certainly mid-way when the
    # client leaves, so each exit is a real mid-stream disconnect.
    with start_stack(tmp_path, workers=[["--hang-after-tokens", "2"]] * 2) as stack:

        async def leave_after_first_text(client: httpx.AsyncClient, i: int) -> None:
            route = ROUTES[i % 6]
            path, headers, body = build(route, f"leave-{i} a b c d", None, True)
            async with client.stream("POST", stack.url + path, headers=headers,
                                     json=body) as response:
                assert response.status_code == 200
                async for data in response.aiter_bytes():
                    if b"echo" in data:
                        return  # leaving closes the connection mid-stream

        async def wait_forever(client: httpx.AsyncClient, i: int) -> None:
            path, headers, body = build(ROUTES[i % 6], f"gone-{i} a b c d", None, False)
            await client.post(stack.url + path, headers=headers, json=body, timeout=120)
            raise AssertionError("a hung non-streaming request cannot have answered")

        async def main() -> None:
            limits = httpx.Limits(max_connections=300)
            async with httpx.AsyncClient(timeout=30, limits=limits) as client:
                waiting = [asyncio.create_task(wait_forever(client, i)) for i in range(20)]
                await asyncio.gather(*(leave_after_first_text(client, i) for i in range(200)))
                # The non-streaming callers leave once the frontend holds their requests
                # (a condition, not a timer: under load a short timeout left before
                # the request was even read).
                await asyncio.to_thread(
                    stack.wait_inflight, lambda s: s["registered"] >= 220, timeout=60
                )
                for task in waiting:
                    task.cancel()
                outcomes = await asyncio.gather(*waiting, return_exceptions=True)
                assert all(isinstance(o, asyncio.CancelledError) for o in outcomes), outcomes

        asyncio.run(main())
        snap = stack.wait_inflight(lambda s: s["inflight"] == 0, timeout=20)
        assert snap["registered"] == snap["released"] == 220
        deadline = time.monotonic() + 20
        while True:
            ends = [x for x in stack.frontend.lines()
                    if x.get("event") == "request.end" and x.get("endpoint")]
            worker_lines = [x for w in stack.workers for x in w.lines()]
            starts = [x for x in worker_lines if x.get("event") == "worker.start"]
            worker_ends = [x for x in worker_lines if x.get("event") == "worker.end"]
            done = len(ends) == 220 and len(worker_ends) == len(starts)
            if done or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert len(ends) == 220
        assert {x["outcome"] for x in ends} == {"cancelled"}, {x["outcome"] for x in ends}
        # Every stream reached a worker; a non-streaming caller may leave before its
        # dispatch did. Whatever started on a worker was stopped when its caller left.
        assert len(starts) >= 200 and len(worker_ends) == len(starts)
        assert {x["outcome"] for x in worker_ends} == {"cancelled"}


def _hung_and_crossed_stack(tmp_path: Path) -> object:
    return start_stack(
        tmp_path,
        workers=[["--token-delay", "0.002"], ["--hang-after-tokens", "2"],
                 ["--foreign-chunk-after", "1"]],
        frontend=["--chunk-timeout", "1"],
    )


def test_hung_and_crossed_workers_only_hurt_their_own_callers(tmp_path: Path) -> None:
    with _hung_and_crossed_stack(tmp_path) as stack:  # type: ignore[attr-defined]
        assert isinstance(stack, Stack)

        async def main() -> list[Result]:
            async with httpx.AsyncClient(timeout=30) as client:
                return list(await asyncio.gather(*(
                    call(client, stack.url, ROUTES[i % 6], f"fault-{i} a b c", None,
                         (i // 6) % 2 == 0)
                    for i in range(36)
                )))

        started = time.monotonic()
        results = asyncio.run(main())
        assert time.monotonic() - started < 15  # bounded by the 1 s chunk timeout
        kinds = {"own": 0, "timeout": 0, "foreign": 0}
        for result in results:
            if result.own:
                kinds["own"] += 1
            elif result.error == "worker timed out":
                kinds["timeout"] += 1
                assert result.status in (200, 504), result
            elif result.error and "another request" in result.error:
                kinds["foreign"] += 1
                assert result.status in (200, 502), result
                assert "fault" not in result.text  # the foreign chunk was never forwarded
            else:
                raise AssertionError(result)
        assert all(kinds.values()), kinds
        stack.wait_inflight(lambda s: s["inflight"] == 0, timeout=10)
        foreign_lines = [x for x in stack.frontend.lines()
                         if x.get("event") == "stream.foreign_chunk"]
        assert len(foreign_lines) == kinds["foreign"]
        assert all(x["level"] == "ERROR" and x["chunk_request_id"].startswith("foreign-")
                   for x in foreign_lines)
