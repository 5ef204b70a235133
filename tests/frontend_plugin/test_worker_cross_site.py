"""A worker does no work for a body a web page could make a browser send cross-site."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.servers import free_port, run_server

ENVELOPE = (b'{"request_id": "page-1", "x_request_id": null, "endpoint": "chat_completions",'
            b' "model": "echo", "prompt": "from a web page", "max_tokens": 4}')


@contextlib.contextmanager
def _worker(workdir: Path, log: Path) -> Iterator[Any]:
    """A real worker (no token) logging to `log`, serving until the block ends."""
    port = free_port()
    with run_server(["-m", "ridtrace", "serve", "worker", "--port", str(port),
                     "--log-file", str(log)], port=port, workdir=workdir,
                    ready_path="/health") as worker:
        yield worker


@pytest.mark.parametrize("content_type", ["text/plain;charset=UTF-8",
                                          "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x"])
def test_a_simple_cross_site_post_gets_415_and_no_work(tmp_path: Path, content_type: str) -> None:
    # Any page a developer visits can POST these types to 127.0.0.1 without a CORS
    # preflight, and its Host (127.0.0.1:PORT) passes the worker's Host check: a worker
    # without a token parsed the text/plain body as JSON and generated for it, 200, as
    # the frontend, which answers 415 for these types (frontend-plugin.md), never did.
    # (Sent here without the Origin a browser adds, which is refused on its own below.)
    log = tmp_path / "worker.jsonl"
    with _worker(tmp_path, log) as worker:
        answer = httpx.post(f"{worker.url}/v1/work", content=ENVELOPE, timeout=10,
                            headers={"content-type": content_type})
        # The frontend's own dispatch (application/json) is still served.
        served = httpx.post(f"{worker.url}/v1/work", content=ENVELOPE.replace(b"page-1", b"fe-1"),
                            headers={"content-type": "application/json"}, timeout=10)
    assert answer.status_code == 415, answer.text
    # OpenAI's shape, as the worker's 404 and 405 and the frontend's refusals.
    assert answer.json()["error"] == {"message": answer.json()["error"]["message"],
                                      "type": "invalid_request_error", "param": None,
                                      "code": None}
    assert served.status_code == 200
    logged = log.read_text()
    assert '"fe-1"' in logged and '"page-1"' not in logged  # the page's envelope was not read


def test_a_cross_site_post_without_a_content_type_does_no_work(tmp_path: Path) -> None:
    # fetch(url, {method: "POST", mode: "no-cors", body: new Blob([envelope])}) sends no
    # content-type at all, which counts as JSON, and needs no preflight either: the 415
    # above does not stop it. Browsers name the page's origin in `Origin` on every POST;
    # the frontend's dispatch, and any program, sends none.
    log = tmp_path / "worker.jsonl"
    with _worker(tmp_path, log) as worker:
        answer = httpx.post(f"{worker.url}/v1/work", content=ENVELOPE, timeout=10,
                            headers={"origin": "https://page.example"})
        served = httpx.post(f"{worker.url}/v1/work", timeout=10,
                            content=ENVELOPE.replace(b"page-1", b"program-1"))
    assert answer.status_code == 403, answer.text
    assert answer.json()["error"]["type"] == "invalid_request_error"
    assert served.status_code == 200
    logged = log.read_text()
    assert '"program-1"' in logged and '"page-1"' not in logged
