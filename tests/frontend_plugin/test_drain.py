"""The drain in process: what a stop does to held requests and to a late arrival.

The end-to-end behaviour under SIGTERM is in test_graceful_shutdown_e2e.py.
"""

from __future__ import annotations

import asyncio

import httpx
import orjson

from ridtrace.frontend_plugin import FrontendSettings, create_frontend_app
from ridtrace.frontend_plugin.drain import SHUTTING_DOWN, Drain, StopOnDrain, Stopped


def test_a_request_arriving_after_the_stop_is_sent_elsewhere_with_its_ids() -> None:
    drain = Drain()
    app = create_frontend_app(FrontendSettings(workers=("http://127.0.0.1:9",)), drain=drain)
    assert drain.stop_all() == 0

    async def main() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.post("/v1/messages", headers={"x-request-id": "late-1"}, json={
                "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]})

    response = asyncio.run(main())
    assert response.status_code == 503
    assert response.headers["retry-after"] == "0" and response.headers["connection"] == "close"
    assert response.headers["x-request-id"] == "late-1" and response.headers["x-server-request-id"]
    assert orjson.loads(response.content) == {
        "type": "error", "error": {"type": "api_error", "message": SHUTTING_DOWN}}


def test_stop_cuts_a_wait_short_but_never_a_write() -> None:
    async def main() -> tuple[str, str]:
        drain = Drain()
        in_wait, at_write, written = asyncio.Event(), asyncio.Event(), asyncio.Event()

        async def waiting() -> str:
            stop = StopOnDrain()
            drain.hold(stop)
            in_wait.set()
            try:
                await stop.wait(asyncio.Event().wait())  # never set
            except Stopped as exc:
                return str(exc)
            return "not stopped"

        async def writing() -> str:
            stop = StopOnDrain()
            drain.hold(stop)
            at_write.set()
            await written.wait()  # stands in for a write to a slow client: not a wait()
            try:
                await stop.wait(asyncio.sleep(0))
            except Stopped as exc:
                return "after the write: " + str(exc)
            return "not stopped"

        tasks = [asyncio.create_task(waiting()), asyncio.create_task(writing())]
        await in_wait.wait()
        await at_write.wait()
        assert drain.stop_all() == 2
        written.set()
        first, second = await asyncio.gather(*tasks)
        return first, second

    assert asyncio.run(main()) == (SHUTTING_DOWN, "after the write: " + SHUTTING_DOWN)
