"""A frontend out of file descriptors is overloaded itself; its workers are fine.

It raises its soft limit as far as the hard one lets it, and says in the log when even
that holds fewer requests than ``max_connections``.

The frontend runs with a low ``RLIMIT_NOFILE`` and idle client connections hold all but
one of its descriptors: the one connection left can still bring requests, but no
connection to a worker can be opened for them (``EMFILE``, errno 24). Before the fix that
counted as each worker refusing the connection: callers got 502 ``worker unavailable``
(which tells them the backend is broken, not to come back shortly), every healthy worker
was marked down and ``/health`` said 503 to the load balancer, so the frontend shed its
traffic for a trouble that ended as soon as a few connections closed.
"""

from __future__ import annotations

import os
import resource
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from ridtrace.cli.serve_run import FEW_DESCRIPTORS
from tests.frontend_plugin.conftest import Stack, start_stack

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(),
                                reason="counts the frontend's descriptors in /proc")

_FD_LIMIT = 64


def _limit_open_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (_FD_LIMIT, _FD_LIMIT))


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _wait_fds(pid: int, predicate: object, *, timeout: float = 30.0) -> int:
    """Poll the frontend's descriptor count until ``predicate(count)`` holds."""
    deadline = time.monotonic() + timeout
    while not predicate(count := _open_fds(pid)):  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"frontend holds {count} descriptors")
        time.sleep(0.02)
    return count


def _accepted(server_port: int, client_port: int) -> bool:
    """Whether the server took the connection from ``client_port`` off its backlog: a
    connection still waiting there belongs to no process (inode 0 in /proc/net/tcp)."""
    ends = (f":{server_port:04X}", f":{client_port:04X}")
    for row in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = row.split()
        if (fields[1][-5:], fields[2][-5:]) == ends:
            return fields[9] != "0"
    return False


def _hold_all_but_one(url: str, pid: int) -> list[socket.socket]:
    """Idle connections to the frontend until it has one descriptor left, each one
    waited for (accepted) before the next, so the count is exact."""
    port = int(url.rsplit(":", 1)[1])
    held: list[socket.socket] = []
    while _open_fds(pid) < _FD_LIMIT - 1:
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        held.append(sock)
        deadline = time.monotonic() + 30
        while not _accepted(port, sock.getsockname()[1]):
            assert time.monotonic() < deadline, "the frontend did not accept a connection"
            time.sleep(0.01)
    assert _open_fds(pid) == _FD_LIMIT - 1
    return held


# Workers by address, and by a name the frontend must look up: a lookup with no
# descriptor left fails as 'Name or service not known', not as EMFILE.
@pytest.fixture(params=["127.0.0.1", "localhost"])
def exhausted(
    tmp_path: Path, request: pytest.FixtureRequest,
) -> Iterator[tuple[Stack, list[socket.socket]]]:
    # --header-timeout: the held connections send nothing and must stay open.
    with start_stack(
        tmp_path, workers=[[], []], frontend=["--header-timeout", "300"],
        frontend_preexec_fn=_limit_open_files, worker_host=request.param,
    ) as stack:
        held = _hold_all_but_one(stack.url, stack.frontend.process.pid)
        try:
            yield stack, held
        finally:
            for sock in held:
                sock.close()


def test_a_frontend_out_of_descriptors_answers_503_and_keeps_its_workers(
    exhausted: tuple[Stack, list[socket.socket]],
) -> None:
    stack, held = exhausted
    url, pid = stack.url, stack.frontend.process.pid
    one = httpx.Limits(max_connections=1)
    # One connection at a time (the last descriptor), closed before the next client's.
    with httpx.Client(base_url=url, timeout=30, limits=one) as client:
        chat = {"model": "echo", "messages": [{"role": "user", "content": "hello there"}]}
        plain = client.post("/v1/chat/completions", json=chat)
        streamed = client.post("/v1/chat/completions", json={**chat, "stream": True})
        for answer in (plain, streamed):
            assert answer.status_code == 503, answer.text
            # The SDKs wait Retry-After (seconds) before their retry, and retry a 503.
            assert answer.headers["retry-after"] == "1"
            assert "x-should-retry" not in answer.headers
            error = answer.json()["error"]
            assert error["message"] == "frontend overloaded; retry shortly"
            assert error["type"] == "server_error"
            assert "Errno" not in answer.text and "127.0.0.1" not in answer.text
        # The workers did nothing wrong: still in rotation, so the balancer keeps us.
        health = client.get("/health")
        assert (health.status_code, health.json()["workers"]) == (200, {"total": 2, "up": 2})
    _wait_fds(pid, lambda now: now < _FD_LIMIT)  # the last one is free again

    oai = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0,
                        http_client=openai.DefaultHttpxClient(limits=one))
    with oai, pytest.raises(openai.InternalServerError) as oai_refused:
        oai.chat.completions.create(model="echo", messages=[{"role": "user", "content": "hi"}])
    assert oai_refused.value.status_code == 503
    _wait_fds(pid, lambda now: now < _FD_LIMIT)  # the last one is free again
    claude = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0,
                                 http_client=anthropic.DefaultHttpxClient(limits=one))
    with claude, pytest.raises(anthropic.InternalServerError) as claude_refused:
        claude.messages.create(model="echo", max_tokens=16,
                               messages=[{"role": "user", "content": "hi"}])
    assert claude_refused.value.status_code == 503
    assert claude_refused.value.response.headers["retry-after"] == "1"

    frontend = stack.frontend
    # Said at start-up, with what to raise.
    warned = frontend.wait_for_lines(lambda line: line.get("message") == FEW_DESCRIPTORS, 1)
    assert warned[0]["level"] == "WARN"
    assert (warned[0]["open_file_limit"], warned[0]["concurrent_requests"]) == (64, 0)
    overloaded = frontend.wait_for_lines(
        lambda line: line.get("event") == "dispatch.overloaded", 4)
    assert all(line["level"] == "ERROR" for line in overloaded)
    assert all("out of file descriptors" in str(line["error"]) for line in overloaded)
    ends = frontend.wait_for_lines(
        lambda line: line.get("event") == "request.end" and line.get("status") == 503, 4)
    assert all("out of file descriptors" in str(line["error"]) for line in ends)
    assert not [line for line in frontend.lines() if line.get("event") == "dispatch.retry"]

    # Once connections close, the frontend serves again, on both workers.
    for sock in held:
        sock.close()
    _wait_fds(pid, lambda now: now < _FD_LIMIT - 8)
    with httpx.Client(base_url=url, timeout=30) as client:
        for i in range(4):
            served = client.post("/v1/chat/completions", json={
                "model": "echo", "messages": [{"role": "user", "content": f"again {i}"}]})
            assert served.status_code == 200, served.text
            assert f"again {i}" in served.json()["choices"][0]["message"]["content"]
    for worker in stack.workers:
        worker.wait_for_lines(lambda line: line.get("event") == "worker.end", 2)


def _soft_limit(pid: int) -> int:
    for row in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if row.startswith("Max open files"):
            return int(row.split()[3])
    raise AssertionError("no open-file limit in /proc")


def test_the_frontend_raises_its_soft_limit_to_the_hard_one(tmp_path: Path) -> None:
    # A login shell's soft limit (1024 on most distributions; 64 here) under a higher
    # hard one: before, the frontend kept the soft one and ran out at half of it.
    def low_soft_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (_FD_LIMIT, 4096))

    with start_stack(tmp_path, workers=[[]], frontend=["--header-timeout", "300"],
                     frontend_preexec_fn=low_soft_limit) as stack:
        pid = stack.frontend.process.pid
        assert _soft_limit(pid) == 4096
        port = stack.frontend.port
        held = [socket.create_connection(("127.0.0.1", port), timeout=10)
                for _ in range(2 * _FD_LIMIT)]
        try:
            _wait_fds(pid, lambda now: now > 2 * _FD_LIMIT)  # every one accepted
            served = httpx.post(stack.url + "/v1/chat/completions", timeout=30, json={
                "model": "echo", "messages": [{"role": "user", "content": "room enough"}]})
            assert served.status_code == 200, served.text
        finally:
            for sock in held:
                sock.close()
        assert not [line for line in stack.frontend.lines()
                    if line.get("message") == FEW_DESCRIPTORS]
