"""The mounting example in docs/frontend-plugin.md runs as written."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import Any

import httpx

from tests.frontend_plugin.conftest import Stack

DOC = Path(__file__).resolve().parents[2] / "docs" / "frontend-plugin.md"


def test_mount_example(stack: Stack, monkeypatch: Any) -> None:
    block = re.search(r"```python\n# example: mount\n(.*?)```", DOC.read_text(), re.S)
    assert block is not None
    monkeypatch.setitem(os.environ, "WORKER_URL", stack.workers[0].url)
    namespace: dict[str, Any] = {}
    exec(compile(block.group(1), str(DOC), "exec"), namespace)
    app = namespace["app"]

    async def main() -> tuple[httpx.Response, httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
            home = await client.get("/")
            reply = await client.post(
                "/inference/v1/generate", json={"prompt": "mounted", "request_id": "doc-1"}
            )
        await namespace["frontend"].aclose()
        return home, reply

    home, reply = asyncio.run(main())
    assert home.json() == {"hello": "your own routes keep working"}
    assert reply.status_code == 200
    assert reply.json()["request_id"] == "doc-1" and "mounted" in reply.json()["text"]
    assert reply.headers["x-server-request-id"] != "doc-1"
