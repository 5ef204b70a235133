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
        "type": "error", "error": {"type": "api_error", "message": SHUTTING_DOWN},
        "request_id": response.headers["request-id"]}


def test_a_body_that_finishes_arriving_after_the_stop_is_sent_elsewhere() -> None:
    # The request was on its way in (headers read, body still coming) when in-flight
    # calls were ended: not held yet, so nothing stopped it; uvicorn then cancelled it.
    drain = Drain()
    app = create_frontend_app(FrontendSettings(workers=("http://127.0.0.1:9",)), drain=drain)
    body = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "slow"}]})
    sent: list[dict[str, object]] = []

    async def main() -> None:
        parts = [body[:10], body[10:]]

        async def receive() -> dict[str, object]:
            if len(parts) == 1:
                drain.stop_all()  # the stop lands while the body's second half is awaited
            return {"type": "http.request", "body": parts.pop(0), "more_body": bool(parts)}

        async def send(message: dict[str, object]) -> None:
            sent.append(message)

        scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions",
                 "raw_path": b"/v1/chat/completions", "query_string": b"", "root_path": "",
                 "headers": [(b"content-type", b"application/json"),
                             (b"content-length", str(len(body)).encode())],
                 "http_version": "1.1", "scheme": "http", "server": ("t", 80),
                 "client": ("127.0.0.1", 1)}
        await app(scope, receive, send)

    asyncio.run(main())
    start = sent[0]
    assert start["type"] == "http.response.start" and start["status"] == 503
    assert (b"retry-after", b"0") in start["headers"]  # type: ignore[operator]
    assert orjson.loads(sent[1]["body"])["error"]["message"] == SHUTTING_DOWN  # type: ignore[arg-type]


def test_a_request_held_after_the_stop_is_stopped_at_once() -> None:
    drain = Drain()
    drain.stop_all()
    stopped: list[str] = []

    class Request:
        def stop(self, message: str) -> None:
            stopped.append(message)

    drain.hold(Request())
    assert stopped == [SHUTTING_DOWN]


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
