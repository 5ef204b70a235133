"""The mounting example in docs/frontend-plugin.md runs as written."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
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

    async def main() -> tuple[httpx.Response, httpx.Response, httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
            home = await client.get("/")
            reply = await client.post(
                "/inference/v1/generate", json={"prompt": "mounted", "request_id": "doc-1"}
            )
            counted = await client.post("/v1/messages/count_tokens", json={
                "model": "echo", "messages": [{"role": "user", "content": "hi"}]})
        await namespace["frontend"].aclose()
        return home, reply, counted

    home, reply, counted = asyncio.run(main())
    # The Anthropic SDK's request id: `request-id`, the server's (it was missing).
    assert counted.headers["request-id"] == counted.headers["x-server-request-id"]
    assert home.json() == {"hello": "your own routes keep working"}
    assert reply.status_code == 200
    assert reply.json()["request_id"] == "doc-1" and "mounted" in reply.json()["text"]
    assert reply.headers["x-server-request-id"] != "doc-1"


def _traffic_blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n# example: send traffic\n(.*?)```", DOC.read_text(), re.S)


def test_send_traffic_examples(stack: Stack, tmp_path: Path) -> None:
    # No page showed how to talk to the frontend; these are the ones that do, run as
    # written against a real stack (only the address changes).
    [shell] = _traffic_blocks("shell")
    [python] = _traffic_blocks("python")
    lines = [line for line in shell.splitlines() if line.startswith("curl ")]
    assert len(lines) == 4
    if shutil.which("curl"):
        for line in lines:
            done = subprocess.run(["bash", "-c", line.replace("http://127.0.0.1:8000", stack.url)],
                                  capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, f"{line}\n{done.stderr}"
            assert "echo:" in done.stdout or '"echo' in done.stdout, done.stdout
    script = tmp_path / "sdk_example.py"
    script.write_text(python.replace("http://127.0.0.1:8000", stack.url))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout.splitlines()
    assert out.count("echo: user: hello there") == 2 and out.count("echo: user: stream it") == 2, out
    assert len(out[1]) == 36  # the x-server-request-id printed on the second line


def test_serve_says_where_it_listens_and_logs(stack: Stack) -> None:
    # Every other line goes to --log-file: this one is all a terminal shows.
    for proc, name in ((stack.frontend, "frontend"), (stack.workers[0], "worker")):
        assert (f"ridtrace serve {name}: listening on {proc.url}, logging to {proc.log}"
                in proc.stderr.read_text()), proc.stderr.read_text()
