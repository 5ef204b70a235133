"""SIGTERM with requests in flight: `ridtrace serve` processes drain, then answer the rest.

Real processes and real sockets: what a caller sees when uvicorn's shutdown timeout runs
out (a plain 500, a stream cut mid-chunk) only shows on the wire.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson

from ridtrace.frontend_plugin.failures import WORKER_ERROR
from tests.frontend_plugin.conftest import Proc, _spawn, start_stack
from tests.frontend_plugin.traffic import ROUTES, build, extract
from tests.support.servers import free_port, stop_process, wait_until_serving

SHUTTING_DOWN = "server shutting down"


def wait_for_line(
    proc: Proc, predicate: Callable[[dict[str, Any]], bool], *, timeout: float = 30.0
) -> dict[str, Any]:
    """The first log line of ``proc`` that satisfies ``predicate`` (polls the file)."""
    deadline = time.monotonic() + timeout
    while True:
        for line in proc.lines():
            if predicate(line):
                return line
        if time.monotonic() > deadline:
            raise AssertionError(f"no such line in {proc.log}; stderr: {proc.stderr.read_text()}")
        time.sleep(0.02)


def request_ends(proc: Proc) -> list[dict[str, Any]]:
    return [x for x in proc.lines() if x.get("event") == "request.end" and x.get("endpoint")]


class Outcome:
    """What one caller received."""

    def __init__(self, route: str, stream: bool) -> None:
        self.route = route
        self.stream = stream
        self.status = 0
        self.headers: httpx.Headers = httpx.Headers()
        self.raw = b""
        self.transport_error: str | None = None

    @property
    def text_and_error(self) -> tuple[str, str | None]:
        text, error, _ = extract(self.route, self.stream and self.status == 200, self.raw)
        return text, error


async def send(
    client: httpx.AsyncClient, url: str, route: str, stream: bool, marker: str,
    first_text: asyncio.Queue[str],
) -> Outcome:
    """One request; a streaming one reports its first text on ``first_text``."""
    outcome = Outcome(route, stream)
    path, headers, body = build(route, marker, f"client-{route}-{int(stream)}", stream)
    try:
        async with client.stream("POST", url + path, headers=headers, json=body) as response:
            outcome.status, outcome.headers = response.status_code, response.headers
            async for data in response.aiter_bytes():
                if stream and b"echo" in data and b"echo" not in outcome.raw:
                    first_text.put_nowait(route)
                outcome.raw += data
    except httpx.TransportError as exc:
        outcome.transport_error = f"{type(exc).__name__}: {exc}"
    return outcome


def _error_body_message(route: str, body: dict[str, Any]) -> str:
    if route == "messages":  # Anthropic's shape
        assert body["type"] == "error" and body["error"]["type"] == "api_error", body
        return str(body["error"]["message"])
    assert body["error"]["type"] == "server_error", body  # OpenAI's shape, and generate's
    return str(body["error"]["message"])


def _stopped_mid_reply(
    stack: Any, streams: tuple[bool, ...], stop: Callable[[], None]
) -> tuple[list[Outcome], float]:
    """A request per route (streamed and not, as `streams` says), each under way (every
    stream delivered text), then `stop` (run in a thread); what each caller received,
    and how long after `stop` the frontend exited 0."""
    frontend = stack.frontend

    async def main() -> tuple[list[Outcome], float]:
        first_text: asyncio.Queue[str] = asyncio.Queue()
        async with httpx.AsyncClient(timeout=30) as client:
            tasks = [
                asyncio.create_task(send(client, stack.url, route, stream,
                                         f"m-{route}-{stream} w1 w2 w3", first_text))
                for route in ROUTES for stream in streams
            ]
            for _ in ROUTES:  # every stream delivered text: its exchange is under way
                await first_text.get()
            await asyncio.to_thread(stack.wait_inflight,
                                    lambda s: s["inflight"] == len(tasks))
            await asyncio.to_thread(stop)
            stopped = time.monotonic()
            outcomes = await asyncio.gather(*tasks)
            exit_code = await asyncio.to_thread(frontend.process.wait, 30)
            assert exit_code == 0, frontend.stderr.read_text()
            return outcomes, time.monotonic() - stopped

    return asyncio.run(main())


def test_requests_still_running_near_the_deadline_get_an_answer_from_the_app(
    tmp_path: Path,
) -> None:
    # The worker stops after two tokens and keeps the stream open: nothing finishes on
    # its own, so every request is still running when the grace period ends.
    with start_stack(
        tmp_path, workers=[["--hang-after-tokens", "2"]], frontend=["--graceful-timeout", "2"]
    ) as stack:
        frontend = stack.frontend
        outcomes, stopped_after = _stopped_mid_reply(
            stack, (False, True), lambda: os.kill(frontend.process.pid, signal.SIGTERM))
        assert stopped_after < 2 + 3, stopped_after  # the grace period, plus the flush

        for outcome in outcomes:
            assert outcome.transport_error is None, (outcome.route, outcome.transport_error)
            assert outcome.headers.get("x-server-request-id"), outcome.headers
            assert outcome.headers["x-request-id"] == f"client-{outcome.route}-{int(outcome.stream)}"
            if outcome.stream:
                # A 200 stream that says why it ends, and then ends: no body cut mid-chunk.
                assert outcome.status == 200
                text, error = outcome.text_and_error
                assert error == SHUTTING_DOWN, (outcome.route, outcome.raw[-300:])
                assert text.startswith("echo:"), text
                assert outcome.raw.endswith(b"\n\n"), outcome.raw[-100:]
            else:
                assert outcome.status == 503, (outcome.route, outcome.raw)
                assert outcome.headers["content-type"] == "application/json"
                # Retry at once, elsewhere: as every other shutdown 503 says.
                assert outcome.headers.get("retry-after") == "0", outcome.headers
                assert outcome.headers.get("connection") == "close", outcome.headers
                message = _error_body_message(outcome.route, orjson.loads(outcome.raw))
                assert message == SHUTTING_DOWN

        ends = request_ends(frontend)
        assert len(ends) == 12
        for end in ends:
            assert end["outcome"] == "error", end  # the client did not go away
            assert end["error"] == SHUTTING_DOWN
            assert end["status"] == (200 if end["stream"] else 503)
        stop = wait_for_line(frontend, lambda x: x.get("event") == "shutdown.stop", timeout=0)
        assert stop["requests"] == 12
        assert not any("graceful shutdown exceeded" in str(x.get("message")) for x in frontend.lines())


def test_ctrl_c_twice_ends_the_requests_at_once_as_the_server_s_not_the_clients(
    tmp_path: Path,
) -> None:
    # uvicorn's forced exit cancelled what still ran: each stream was cut mid-chunk and
    # its request.end said `cancelled`, the clients' act, in the logs, spans and metrics.
    with start_stack(
        tmp_path, workers=[["--hang-after-tokens", "2"]], frontend=["--graceful-timeout", "60"]
    ) as stack:
        frontend = stack.frontend

        def ctrl_c_twice() -> None:
            os.kill(frontend.process.pid, signal.SIGINT)
            wait_for_line(frontend, lambda x: x.get("event") == "shutdown.drain")
            os.kill(frontend.process.pid, signal.SIGINT)  # and again: force it

        outcomes, stopped_after = _stopped_mid_reply(stack, (True,), ctrl_c_twice)
        assert stopped_after < 10, stopped_after  # not the 60 s grace period
        for outcome in outcomes:
            assert outcome.transport_error is None, (outcome.route, outcome.transport_error)
            assert outcome.status == 200
            text, error = outcome.text_and_error
            assert error == SHUTTING_DOWN, (outcome.route, outcome.raw[-300:])
            assert text.startswith("echo:"), text
        ends = request_ends(frontend)
        assert len(ends) == len(ROUTES)
        for end in ends:
            assert (end["outcome"], end["error"]) == ("error", SHUTTING_DOWN), end
        # The forced exit cancelled the lifespan where it waited: Starlette's traceback of
        # that cancel was an ERROR line of uvicorn's, as if the app had failed.
        assert not [x for x in frontend.lines() if x.get("level") == "ERROR"], [
            x["message"][:200] for x in frontend.lines() if x.get("level") == "ERROR"]


def test_requests_that_finish_within_the_grace_period_complete_normally(tmp_path: Path) -> None:
    # The gate holds every reply until the test opens it, after SIGTERM.
    with start_stack(
        tmp_path, workers=[["--gate", "--token-delay", "0.01"]],
        frontend=["--graceful-timeout", "30"],
    ) as stack:
        frontend = stack.frontend
        marker = "finish " + " ".join(f"w{i}" for i in range(20))

        async def main() -> tuple[list[Outcome], float]:
            unused: asyncio.Queue[str] = asyncio.Queue()
            async with httpx.AsyncClient(timeout=60) as client:
                tasks = [
                    asyncio.create_task(send(client, stack.url, "chat", stream, marker, unused))
                    for stream in (False, True)
                ]
                await asyncio.to_thread(stack.wait_inflight, lambda s: s["inflight"] == 2)
                os.kill(frontend.process.pid, signal.SIGTERM)
                signalled = time.monotonic()
                await asyncio.to_thread(
                    wait_for_line, frontend, lambda x: x.get("event") == "shutdown.drain")
                stack.open_gates()  # the listener is closed by now; the requests go on
                outcomes = await asyncio.gather(*tasks)
                exit_code = await asyncio.to_thread(frontend.process.wait, 20)
                assert exit_code == 0, frontend.stderr.read_text()
                return outcomes, time.monotonic() - signalled

        outcomes, stopped_after = asyncio.run(main())
        assert stopped_after < 15, stopped_after  # it did not sit out the 30 s
        for outcome in outcomes:
            assert outcome.transport_error is None, outcome.transport_error
            assert outcome.status == 200
            text, error = outcome.text_and_error
            assert error is None and text == "echo: user: " + marker, (text, error)
        drain = wait_for_line(frontend, lambda x: x.get("event") == "shutdown.drain", timeout=0)
        assert drain["inflight"] == 2 and drain["graceful_timeout"] == 30
        assert [end["outcome"] for end in request_ends(frontend)] == ["ok", "ok"]
        assert not any(x.get("event") == "shutdown.stop" for x in frontend.lines())


def test_a_stopping_worker_ends_its_streams_with_an_error_the_frontend_reports(
    tmp_path: Path,
) -> None:
    with start_stack(
        tmp_path, workers=[["--hang-after-tokens", "2", "--graceful-timeout", "2"]],
    ) as stack:
        worker = stack.workers[0]

        async def main() -> list[Outcome]:
            first_text: asyncio.Queue[str] = asyncio.Queue()
            async with httpx.AsyncClient(timeout=30) as client:
                tasks = [
                    asyncio.create_task(send(client, stack.url, "chat", stream, f"w-{stream}",
                                             first_text))
                    for stream in (False, True)
                ]
                await first_text.get()
                await asyncio.to_thread(stack.wait_inflight, lambda s: s["inflight"] == 2)
                os.kill(worker.process.pid, signal.SIGTERM)
                outcomes = await asyncio.gather(*tasks)
                assert await asyncio.to_thread(worker.process.wait, 10) == 0
                return outcomes

        plain, streamed = asyncio.run(main())
        # Callers get the fixed phrase for a failed worker; the reason is in the log.
        assert plain.status == 502
        assert orjson.loads(plain.raw)["error"]["message"] == WORKER_ERROR
        assert streamed.status == 200 and streamed.transport_error is None
        assert streamed.text_and_error[1] == WORKER_ERROR
        ends = [x for x in worker.lines() if x.get("event") == "worker.end"]
        assert [(x["outcome"], x["error"]) for x in ends] == [("error", SHUTTING_DOWN)] * 2
        front_ends = request_ends(stack.frontend)
        assert {x["outcome"] for x in front_ends} == {"error"}
        assert all(SHUTTING_DOWN in str(x["error"]) for x in front_ends), front_ends


def test_requests_a_stopping_worker_had_not_started_answering_go_to_another_worker(
    tmp_path: Path,
) -> None:
    # A rolling restart: the stopping worker ends what still waits for its first token
    # with an error line, before anything reached the caller. Those callers got 502
    # 'worker error' while the other worker was idle; a retry elsewhere is safe then,
    # as after a refused connection or a 5xx.
    with start_stack(
        tmp_path, workers=[["--first-token-delay", "60", "--graceful-timeout", "2"], []],
    ) as stack:
        stopping, healthy = stack.workers

        async def main() -> list[Outcome]:
            first_text: asyncio.Queue[str] = asyncio.Queue()
            async with httpx.AsyncClient(timeout=30) as client:
                tasks = [
                    asyncio.create_task(send(client, stack.url, route, stream,
                                             f"m-{route}-{stream} w1 w2", first_text))
                    for route in ROUTES for stream in (False, True)
                ]
                # Round robin over two workers: every other dispatch, six, wait on
                # `stopping` (the other six are answered at once).
                await asyncio.to_thread(_wait_for_starts, stopping, 6)
                os.kill(stopping.process.pid, signal.SIGTERM)
                outcomes = list(await asyncio.gather(*tasks))
                assert await asyncio.to_thread(stopping.process.wait, 10) == 0
                return outcomes

        outcomes = asyncio.run(main())
        for outcome in outcomes:
            assert (outcome.status, outcome.transport_error) == (200, None), outcome.raw
            text, error = outcome.text_and_error
            marker = f"m-{outcome.route}-{outcome.stream} w1 w2"
            assert error is None and marker in text, (outcome.route, text, error)
        ends = [x for x in stopping.lines() if x.get("event") == "worker.end"]
        assert [(x["outcome"], x["error"]) for x in ends] == [("error", SHUTTING_DOWN)] * 6
        front_ends = request_ends(stack.frontend)
        assert len(front_ends) == 12 and {x["outcome"] for x in front_ends} == {"ok"}
        retried = [x for x in front_ends if x["attempts"] == 2]
        assert len(retried) == 6 and {x["worker"] for x in retried} == {healthy.url}
        retries = [x for x in stack.frontend.lines() if x.get("event") == "dispatch.retry"]
        assert [(x["reason"], x["marked_down"]) for x in retries] == [("worker_error", True)] * 6
        snap = stack.wait_inflight(lambda s: s["inflight"] == 0)
        assert snap["registered"] == snap["released"] == 12


def _wait_for_starts(worker: Proc, count: int) -> None:
    wait_for_line(worker, lambda _: sum(
        x.get("event") == "worker.start" for x in worker.lines()) >= count)


def test_an_idle_keep_alive_connection_is_closed_at_once_not_left_hanging(
    tmp_path: Path,
) -> None:
    """uvicorn's own part of the drain, which the above relies on: idle keep-alive
    connections are closed when the drain starts and the listener with them, so a new
    request fails at once with a connection error (a client or balancer retries it
    elsewhere) instead of waiting for an answer that never comes."""
    with start_stack(
        tmp_path, workers=[["--hang-after-tokens", "2"]], frontend=["--graceful-timeout", "3"]
    ) as stack:
        frontend = stack.frontend

        async def main() -> tuple[Outcome, BaseException | None, float]:
            first_text: asyncio.Queue[str] = asyncio.Queue()
            limits = httpx.Limits(max_connections=1)
            async with httpx.AsyncClient(timeout=30) as busy, \
                    httpx.AsyncClient(timeout=10, limits=limits) as idle:
                assert (await idle.get(stack.url + "/health")).status_code == 200
                held = asyncio.create_task(
                    send(busy, stack.url, "chat", True, "keep w1", first_text))
                await first_text.get()
                os.kill(frontend.process.pid, signal.SIGTERM)
                await asyncio.to_thread(
                    wait_for_line, frontend, lambda x: x.get("event") == "shutdown.drain")
                started = time.monotonic()
                failure: BaseException | None = None
                try:
                    await idle.get(stack.url + "/health")
                except httpx.TransportError as exc:
                    failure = exc
                took = time.monotonic() - started
                return await held, failure, took

        streamed, failure, took = asyncio.run(main())
        assert isinstance(failure, httpx.ConnectError), failure
        assert took < 2, took
        # The drained request still got its clean end.
        assert streamed.status == 200 and streamed.text_and_error[1] == SHUTTING_DOWN


def test_a_body_still_arriving_when_the_grace_period_ends_gets_a_503(tmp_path: Path) -> None:
    """A caller whose body is still on its way (a large prompt on a slow link) is a
    request in flight too. uvicorn cancelled its body read at the end of the grace
    period: the caller got uvicorn's plain-text 500 with no ids, request.end said
    'cancelled' (the client never left) and the log an 'Exception in ASGI application'
    traceback. Now it gets the 503 of any request the stop ends, in its API's shape."""
    frontend = _spawn(["frontend", "--worker", f"http://127.0.0.1:{free_port()}",
                       "--graceful-timeout", "1"], tmp_path, "frontend")
    paths = {"messages": "/v1/messages", "count": "/v1/messages/count_tokens",
             "chat": "/v1/chat/completions"}
    socks: dict[str, socket.socket] = {}
    try:
        wait_until_serving(frontend.url, frontend.process, timeout=60, path="/health")
        for name, path in paths.items():
            sock = socket.create_connection(("127.0.0.1", frontend.port), timeout=30)
            socks[name] = sock
            sock.sendall(f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nx-request-id: slow-{name}"
                         "\r\ncontent-type: application/json\r\ncontent-length: 4096\r\n\r\n"
                         '{"messages": [{"role": "us'.encode())
        for name in paths:  # each request is reading its body
            frontend.wait_for_lines(lambda x, name=name: x.get("event") == "request.start"
                                    and x.get("x_request_id") == f"slow-{name}", 1)
        os.kill(frontend.process.pid, signal.SIGTERM)
        answers = {}
        for name, sock in socks.items():
            answer = b""
            while chunk := sock.recv(65536):  # the answer closes the connection
                answer += chunk
            answers[name] = answer
        assert frontend.process.wait(10) == 0, frontend.stderr.read_text()
    finally:
        for sock in socks.values():
            sock.close()
        stop_process(frontend.process)
    for name, answer in answers.items():
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 503 "), (name, answer[:300])
        headers = head.lower().split(b"\r\n")
        assert b"retry-after: 0" in headers and b"connection: close" in headers, head
        assert f"x-request-id: slow-{name}".encode() in headers, head
        payload = orjson.loads(body)
        assert _error_body_message("messages" if name != "chat" else "chat",
                                   payload) == SHUTTING_DOWN
    ends = {x.get("x_request_id"): x for x in frontend.lines() if x.get("event") == "request.end"}
    for name in paths:
        end = ends[f"slow-{name}"]
        assert (end["status"], end["outcome"], end["error"]) == (503, "error", SHUTTING_DOWN)
    assert not [x for x in frontend.lines() if x.get("level") == "ERROR"]
    stop = wait_for_line(frontend, lambda x: x.get("event") == "shutdown.stop", timeout=0)
    assert stop["requests"] == len(paths)


def test_a_work_envelope_still_arriving_when_the_grace_period_ends_gets_a_503(
    tmp_path: Path,
) -> None:
    """The worker's counterpart of the test above: an envelope on its way at the stop
    (a direct caller, a slow link) got uvicorn's plain-text 500 without ids, an
    'Exception in ASGI application' traceback and no worker line. Now it is refused
    with a 503 that sends its caller elsewhere, and `worker.refused` says so."""
    worker = _spawn(["worker", "--graceful-timeout", "1"], tmp_path, "worker")
    try:
        wait_until_serving(worker.url, worker.process, timeout=60, path="/health")
        with socket.create_connection(("127.0.0.1", worker.port), timeout=30) as sock:
            sock.sendall(b"POST /v1/work HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: "
                         b"application/json\r\ncontent-length: 4096\r\n"
                         b"expect: 100-continue\r\n\r\n")
            # uvicorn sends 100 Continue at the app's first body read: the envelope is
            # being read now.
            assert sock.recv(1024).startswith(b"HTTP/1.1 100 ")
            sock.sendall(b'{"request_id": "slow-1", "prom')
            os.kill(worker.process.pid, signal.SIGTERM)
            answer = b""
            while chunk := sock.recv(65536):  # the answer closes the connection
                answer += chunk
        assert worker.process.wait(10) == 0, worker.stderr.read_text()
    finally:
        stop_process(worker.process)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503 "), answer[:300]
    headers = head.lower().split(b"\r\n")
    assert b"retry-after: 0" in headers and b"connection: close" in headers, head
    assert any(h.startswith(b"x-server-request-id: ") for h in headers), head
    error = orjson.loads(body)["error"]
    assert (error["message"], error["type"]) == (SHUTTING_DOWN, "server_error")  # as the frontend's
    lines = worker.lines()
    refused = [x for x in lines if x.get("event") == "worker.refused"]
    assert [(x["status"], x["outcome"], x["error"]) for x in refused] == [
        (503, "error", SHUTTING_DOWN)]
    assert not [x for x in lines if x.get("level") == "ERROR"]
    drain = wait_for_line(worker, lambda x: x.get("event") == "shutdown.drain", timeout=0)
    assert drain["inflight"] == 1
