"""A worker that finished just after its frontend gave up (a timeout) lost no caller.

Found on a real safe stack under load: a non-streaming call timed out (`--total-timeout`,
504) while its worker was writing its last tokens; the worker, not yet aware of the
hang-up, logged `worker.end` ok with its output, and `ridtrace analyze` reported that
output as `unlinked` ("produced fp_out … that no caller received", exit 1) — an incident
of the seed's kind on a stack whose ids never collide, for the race of any timeout. A
proxy that lets the worker finish after its client left (nginx's
`proxy_ignore_client_abort on`) makes that race certain here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.frontend_plugin.conftest import Proc
from tests.support.inprocess_cli import run_in_process
from tests.support.loop_server import loop_server
from tests.support.servers import free_port, run_server

CHAT = {"model": "echo", "stream": False, "max_tokens": 100,
        "messages": [{"role": "user", "content": " ".join(f"word{i}" for i in range(12))}]}


async def _to_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()


async def _to_upstream_to_its_end(reader: asyncio.StreamReader,
                                  writer: asyncio.StreamWriter) -> None:
    """Upstream's bytes to the client while it listens, then read on and dropped until
    upstream stays quiet (its answer is complete: a kept-alive connection sends no EOF)."""
    listening = True
    with contextlib.suppress(ConnectionError, TimeoutError):
        while data := await asyncio.wait_for(reader.read(65536), 2.0):
            if listening:
                try:
                    writer.write(data)
                    await writer.drain()
                except ConnectionError:
                    listening = False


@contextlib.contextmanager
def client_abort_ignoring_proxy(upstream_port: int) -> Iterator[int]:
    """A TCP proxy on a free loopback port to ``upstream_port`` that keeps the upstream
    connection open, reading the answer to its end, after the client hung up."""
    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        up_r, up_w = await asyncio.open_connection("127.0.0.1", upstream_port)
        # The client's hang-up is not passed on: upstream's answer is read to its end.
        await asyncio.gather(_to_client(client_r, up_w), _to_upstream_to_its_end(up_r, client_w))
        up_w.close()
        client_w.close()

    with loop_server(handle) as port:
        yield port


@pytest.fixture(scope="module")
def timed_out_call(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Logs of a real safe stack whose one call timed out at the frontend (504) while
    its worker went on to finish the reply."""
    tmp_path = tmp_path_factory.mktemp("abandoned")
    logs = tmp_path / "logs"
    worker_port, frontend_port = free_port(), free_port()
    worker_log = logs / f"worker-{worker_port}.jsonl"
    # 13 tokens at 0.1 s: about 1.3 s of work, past the frontend's 0.8 s total timeout.
    worker_argv = ["-m", "ridtrace", "serve", "worker", "--port", str(worker_port),
                   "--token-delay", "0.1", "--log-file", str(worker_log)]
    with (run_server(worker_argv, port=worker_port, workdir=tmp_path,
                     ready_path="/health") as worker,
          client_abort_ignoring_proxy(worker_port) as proxy_port):
        frontend_argv = ["-m", "ridtrace", "serve", "frontend", "--port", str(frontend_port),
                         "--worker", f"http://127.0.0.1:{proxy_port}",
                         "--total-timeout", "0.8", "--log-file", str(logs / "frontend.jsonl")]
        with run_server(frontend_argv, port=frontend_port, workdir=tmp_path,
                        ready_path="/health") as front:
            answer = httpx.post(f"{front.url}/v1/chat/completions", json=CHAT, timeout=30)
            assert answer.status_code == 504
            # The worker's end line comes after the caller's answer: wait for it.
            ends = Proc(worker.process, worker_port, worker_log, worker.stderr_path
                        ).wait_for_lines(lambda line: line.get("event") == "worker.end", 1)
            assert ends[0]["outcome"] == "ok"  # the race this test is about
    return logs


def _ridtrace(*args: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of ``ridtrace ARGS``, in-process: the report is the
    subject here, the servers of the fixture are the real processes."""
    return run_in_process(list(args), env={"COLUMNS": "100"})


def test_output_finished_after_a_timeout_is_not_unlinked(timed_out_call: Path) -> None:
    code, stdout, stderr = _ridtrace("analyze", str(timed_out_call), "--format", "json", "-q")
    report = json.loads(stdout)
    assert report["summary"]["unlinked"] == 0, report["findings"]
    assert report["summary"]["errors"] == 0
    assert code == 0, stderr


def test_trace_shows_no_unlinked_error_for_it(timed_out_call: Path) -> None:
    ids = [json.loads(line)["request_id"]
           for line in (timed_out_call / "frontend.jsonl").read_text().splitlines()
           if '"/v1/chat/completions"' in line]
    code, stdout, stderr = _ridtrace("trace", ids[0], str(timed_out_call), "--format", "json")
    assert code == 0, stderr
    (request,) = json.loads(stdout)["requests"]
    assert request["status"] == "504"
    assert request["findings"] == []
