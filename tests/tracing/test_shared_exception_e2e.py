"""One exception object raised by several requests names each request on its crash line.

Requests coalesced onto one shared future that fails all raise the same exception. The
middleware left each request's ids on the exception before awaiting the app's 500
handler (run in a thread, a plain ``def``): the other requests overwrote them meanwhile,
and 19 of 20 of uvicorn's "Exception in ASGI application" lines, the crash's only
traceback, named another request (docs/tracing.md: the line names the request that
crashed).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from tests.support.otlp_receiver import OtlpReceiver
from tests.tracing.conftest import app_server, wait_for_lines

WAITERS = 12


def test_each_request_that_raised_one_shared_exception_is_named_on_its_crash_line(
    tmp_path: Path, receiver: OtlpReceiver
) -> None:
    with app_server(tmp_path, receiver,
                    app="tests.tracing.shared_failure_app:create_app") as running:

        async def call(client: httpx.AsyncClient, i: int) -> httpx.Response:
            return await client.get(f"/shared/{WAITERS}", headers={"x-request-id": f"req-{i}"})

        async def main() -> list[httpx.Response]:
            limits = httpx.Limits(max_connections=WAITERS)
            async with httpx.AsyncClient(base_url=running.url, timeout=30,
                                         limits=limits) as client:
                return await asyncio.gather(*(call(client, i) for i in range(WAITERS)))

        answers = asyncio.run(main())
        assert [a.status_code for a in answers] == [500] * WAITERS
        server_ids = {a.headers["x-server-request-id"]: a.request.headers["x-request-id"]
                      for a in answers}

        def crashes(lines: list[dict[str, object]]) -> list[dict[str, object]]:
            return [x for x in lines if str(x.get("message", "")).startswith(
                "Exception in ASGI application")]

        lines = wait_for_lines(tmp_path / "app.jsonl", lambda ls: len(crashes(ls)) >= WAITERS)
        httpx.get(f"{running.url}/watchdog", timeout=30).raise_for_status()

        def watchdog(lines: list[dict[str, object]]) -> list[dict[str, object]]:
            return [x for x in lines if x.get("message") == "backend still down"]

        later = wait_for_lines(tmp_path / "app.jsonl", lambda ls: len(watchdog(ls)) == 1)
    named = {(x["request_id"], x["x_request_id"]) for x in crashes(lines)}
    assert named == set(server_ids.items())
    [alone] = watchdog(later)
    assert "backend down" in str(alone["exception"])
    assert (alone.get("request_id"), alone.get("x_request_id")) == (None, None), alone
