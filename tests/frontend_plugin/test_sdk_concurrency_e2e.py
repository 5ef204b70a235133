"""Many official-SDK calls at once, all with one client x-request-id, some cancelled.

The seed's failure through the clients people use: async openai and anthropic calls on
every SDK route share `x-request-id`, overlap for certain (the workers hold every first
token until all are registered), a third of the streams are closed mid-way. Every call
that completes gets its own prompt back and the echoed id; every id is freed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai

from tests.frontend_plugin.conftest import start_stack

SHARED = {"x-request-id": "one-id-for-all"}
N = 48


def _words(i: int) -> str:
    return f"caller {i} " + " ".join(f"w{i}x{j}" for j in range(40))


def _cancelled(i: int) -> bool:
    return i % 6 >= 2 and (i // 6) % 3 == 0  # the streams (kinds 2-5) of every third round


async def _call(i: int, oai: openai.AsyncOpenAI, claude: anthropic.AsyncAnthropic
                ) -> tuple[str, str] | None:
    """``(text, echoed x-request-id)``, or None for a stream closed after its first piece."""
    prompt, kind = _words(i), i % 6
    chat: Any = [{"role": "user", "content": prompt}]
    if kind == 0:
        raw = await oai.chat.completions.with_raw_response.create(
            model="echo", messages=chat, extra_headers=SHARED)
        return raw.parse().choices[0].message.content or "", raw.headers["x-request-id"]
    if kind == 1:
        reply = await claude.messages.with_raw_response.create(
            model="echo", max_tokens=100, messages=chat, extra_headers=SHARED)
        message = await reply.parse()
        return message.content[0].text, reply.headers["x-request-id"]  # type: ignore[union-attr]
    if kind == 2:
        stream: Any = await oai.chat.completions.create(
            model="echo", messages=chat, stream=True, extra_headers=SHARED)
        pieces = (c.choices[0].delta.content or "" async for c in stream if c.choices)
    elif kind == 3:
        stream = await oai.completions.create(model="echo", prompt=prompt, stream=True,
                                              extra_headers=SHARED)
        pieces = (c.choices[0].text async for c in stream if c.choices)
    elif kind == 4:
        stream = await oai.responses.create(model="echo", input=prompt, stream=True,
                                            extra_headers=SHARED)
        pieces = (e.delta async for e in stream if e.type == "response.output_text.delta")
    else:
        stream = await claude.messages.create(model="echo", max_tokens=100, messages=chat,
                                              stream=True, extra_headers=SHARED)
        pieces = (e.delta.text async for e in stream if e.type == "content_block_delta")
    text = ""
    async for piece in pieces:
        text += piece
        if _cancelled(i) and text.strip():
            await stream.close()
            return None
    return text, stream.response.headers["x-request-id"]


def test_sdk_calls_sharing_one_id_each_get_their_own_reply(tmp_path: Path) -> None:
    # Paced (~2 s a reply), so a stream closed after its first piece is closed mid-way.
    worker = ["--gate", "--token-delay", "0.05", "--debug-endpoints"]
    with start_stack(tmp_path, workers=[worker, worker]) as stack:

        async def run() -> list[tuple[str, str] | None]:
            limits = httpx.Limits(max_connections=N + 8)
            oai = openai.AsyncOpenAI(base_url=stack.url + "/v1", api_key="k", max_retries=0,
                                     http_client=openai.DefaultAsyncHttpxClient(limits=limits))
            claude = anthropic.AsyncAnthropic(
                base_url=stack.url, api_key="k", max_retries=0,
                http_client=anthropic.DefaultAsyncHttpxClient(limits=limits))
            calls = [asyncio.ensure_future(_call(i, oai, claude)) for i in range(N)]
            wait: Callable[[], Awaitable[object]] = lambda: asyncio.to_thread(  # noqa: E731
                stack.wait_inflight, lambda s: s["inflight"] == N)
            await wait()  # all N hold the one client id at once
            await asyncio.to_thread(stack.open_gates)
            return list(await asyncio.gather(*calls))

        results = asyncio.run(run())
        snapshot = stack.wait_inflight(lambda s: s["inflight"] == 0)
        workers = [httpx.get(w.url + "/debug/inflight", timeout=5).json()
                   for w in stack.workers]
        ends = [line for line in stack.frontend.lines()
                if line.get("event") == "request.end" and line.get("endpoint")]
    completed = 0
    for i, result in enumerate(results):
        if result is None:
            continue
        completed += 1
        text, echoed = result
        prefix = "echo: " if i % 6 == 3 else "echo: user: "
        assert (text, echoed) == (prefix + _words(i), SHARED["x-request-id"]), i
    assert completed == N - sum(map(_cancelled, range(N)))
    outcomes = sorted(str(end["outcome"]) for end in ends)
    assert outcomes == ["cancelled"] * (N - completed) + ["ok"] * completed
    assert snapshot["conflicts"] == 0 and snapshot["registered"] == snapshot["released"] == N
    assert [w["inflight"] for w in workers] == [0, 0]
