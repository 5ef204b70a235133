"""What a worker's refusal of one request does to the frontend's view of that worker.

Only failures that say something about the worker (no connection, 5xx, no first chunk
in time, a refused worker token) take it out of rotation; a refusal of the request
itself (Conflict, another 4xx) must not, or one bad request empties the pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from tests.frontend_plugin.conftest import Proc, _spawn, start_stack
from tests.frontend_plugin.traffic import Result, call
from tests.support.servers import stop_process, wait_until_serving


def test_a_request_a_worker_rejects_does_not_mark_the_worker_down(tmp_path: Path) -> None:
    # A worker that accepts fewer max_tokens than the frontend: its 400 is about this
    # request. Before the fix the worker was marked down for it, so with one worker the
    # frontend's /health said 503 'unavailable' after a single oversized request.
    env = {"RIDTRACE_WORKER_MAX_TOKENS_LIMIT": "8"}
    with start_stack(tmp_path, workers=[[]], env=env) as stack:
        body = {"model": "echo", "messages": [{"role": "user", "content": "hi"}]}
        rejected = httpx.post(stack.url + "/v1/chat/completions", timeout=10,
                              json={**body, "max_tokens": 64})
        assert rejected.status_code == 502, rejected.text
        assert rejected.json()["error"]["message"] == "worker rejected the request"
        # The same body meets the same refusal: the SDKs, which retry every 5xx twice,
        # are told not to. The OpenAI SDK asks once, with its retries on.
        assert rejected.headers["x-should-retry"] == "false"
        starts = len([x for x in stack.frontend.lines() if x.get("event") == "request.start"])
        sdk = openai.OpenAI(base_url=stack.url + "/v1", api_key="x", max_retries=2)
        with pytest.raises(openai.InternalServerError) as refused:
            sdk.chat.completions.create(model="echo", messages=[{"role": "user", "content": "hi"}],
                                        max_tokens=64)
        # Its last line is written after its answer: every line before it is in.
        stack.frontend.wait_for_event(
            refused.value.response.headers["x-server-request-id"], "request.end")
        after = len([x for x in stack.frontend.lines() if x.get("event") == "request.start"])
        assert after - starts == 1

        health = httpx.get(stack.url + "/health", timeout=5)
        assert (health.status_code, health.json()["workers"]) == (200, {"total": 1, "up": 1})
        assert all(w["up"] for w in stack.inflight()["workers"])  # type: ignore[union-attr]
        retries = [x for x in stack.frontend.lines() if x.get("event") == "dispatch.retry"]
        assert [(r["reason"], r["marked_down"]) for r in retries] == [("status_4xx", False)] * 2

        served = httpx.post(stack.url + "/v1/chat/completions", timeout=10,
                            json={**body, "max_tokens": 4})
        assert served.status_code == 200, served.text
        metrics = httpx.get(stack.url + "/metrics", timeout=5).text
        assert "ridtrace_conflict_retries_total" in metrics
        assert not any(line.startswith("ridtrace_conflict_retries_total{") and
                       not line.endswith(" 0.0") for line in metrics.splitlines())


def test_a_full_connection_pool_queues_without_marking_workers_down(tmp_path: Path) -> None:
    # Four streams over a pool of two connections: two wait for a connection while the
    # first two stream for about 2 s (8 tokens 0.25 s apart: sleeps, so never less),
    # well past the 1 s first-byte timeout. Before the fix that wait counted as the
    # worker's first byte: each waiting request marked the (unasked) worker down,
    # retried, marked the other down too and failed with 504 'worker timed out',
    # leaving /health at 503 with two healthy workers.
    slow = ["--token-delay", "0.25"]
    with start_stack(
        tmp_path, workers=[slow, slow], frontend=["--first-byte-timeout", "1"],
        env={"RIDTRACE_FRONTEND_MAX_CONNECTIONS": "2"},
    ) as stack:

        async def main() -> list[Result]:
            async with httpx.AsyncClient(timeout=60) as client:
                return list(await asyncio.gather(*(
                    call(client, stack.url, "chat", f"queued-{i} a b c d e f", None, True)
                    for i in range(4)
                )))

        results = asyncio.run(main())
        for result in results:
            assert result.own, result
        snap = stack.inflight()
        assert snap["inflight"] == 0 and snap["claimed"] == 4, snap
        assert all(w["up"] for w in snap["workers"])  # type: ignore[attr-defined]
        assert httpx.get(stack.url + "/health", timeout=5).status_code == 200
        assert not [x for x in stack.frontend.lines() if x.get("event") == "dispatch.retry"]


def test_a_total_timeout_before_the_first_byte_is_the_requests_not_the_workers(
    tmp_path: Path,
) -> None:
    # total_timeout (1 s) runs out long before first_byte_timeout (30 s by default).
    # Before the fix the caller was told 'worker timed out' (the phrase for a worker
    # silent past first_byte_timeout) and the worker, with 29 s of first-byte time left,
    # was marked down: with one worker /health answered 503.
    with start_stack(tmp_path, workers=[["--first-token-delay", "30"]],
                     frontend=["--total-timeout", "1"]) as stack:
        for stream in (False, True):
            answer = httpx.post(stack.url + "/v1/chat/completions", timeout=30, json={
                "model": "echo", "stream": stream,
                "messages": [{"role": "user", "content": "hi"}]})
            assert answer.status_code == 504, answer.text
            assert answer.json()["error"] == {
                "message": "request timed out", "type": "timeout", "param": None, "code": None}
        assert httpx.get(stack.url + "/health", timeout=5).status_code == 200
        assert all(w["up"] for w in stack.inflight()["workers"])  # type: ignore[union-attr]
        ends = [x for x in stack.frontend.lines()
                if x.get("event") == "request.end" and x.get("status") == 504]
        assert len(ends) == 2
        assert all("total timeout" in str(x["error"]) for x in ends), ends


class _EmptyReplies(http.server.BaseHTTPRequestHandler):
    """A worker that answers every call 200 and ends the body before any line (`body`)."""

    body = b""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "application/x-ndjson")
        self.send_header("content-length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.parametrize(("body", "reason"), [(b"", "closed_early"),
                                            (b"<html>Bad gateway</html>\n", "bad_reply")])
def test_a_reply_that_ends_before_its_first_line_is_named_for_what_it_is(
    tmp_path: Path, body: bytes, reason: str,
) -> None:
    # A 200 whose body ends at once was logged as reason 'status_5xx': a forensic
    # reader looked for a 5xx the worker never sent. A proxy's HTML page was 'connect',
    # as if the worker had not been reached.
    handler = type("Replies", (_EmptyReplies,), {"body": body})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    fe = _spawn(["frontend", "--worker", f"http://127.0.0.1:{server.server_address[1]}"],
                tmp_path, "frontend")
    try:
        wait_until_serving(fe.url, fe.process, timeout=60, path="/health")
        body = {"model": "echo", "messages": [{"role": "user", "content": "hi"}]}
        reply = httpx.post(fe.url + "/v1/chat/completions", json=body, timeout=10)
        assert reply.status_code == 502, reply.text
        # The request's last line is written after its answer: every retry line is in.
        fe.wait_for_event(reply.headers["x-server-request-id"], "request.end")
        retries = [x for x in fe.lines() if x.get("event") == "dispatch.retry"]
        assert retries and {x["reason"] for x in retries} == {reason}, retries
        assert all(x["marked_down"] for x in retries)  # a worker that answers nothing
    finally:
        stop_process(fe.process, grace=5)
        server.shutdown()


def test_a_worker_marked_down_that_answers_again_is_back_in_rotation(tmp_path: Path) -> None:
    # Down workers are still tried last, so a restarted worker serves requests before
    # its cooldown ends; /health went on counting it out (503 'unavailable' with one
    # worker) for the rest of the cooldown, and a load balancer kept the frontend out.
    env = {"RIDTRACE_FRONTEND_DOWN_COOLDOWN": "600"}  # far longer than the test
    body = {"model": "echo", "messages": [{"role": "user", "content": "back again"}]}
    with start_stack(tmp_path, workers=[[]], env=env) as stack:
        port = stack.workers[0].port
        stop_process(stack.workers[0].process, grace=5)
        refused = httpx.post(stack.url + "/v1/chat/completions", json=body, timeout=10)
        assert refused.status_code == 502, refused.text
        down = httpx.get(stack.url + "/health", timeout=5)
        assert (down.status_code, down.json()["workers"]) == (503, {"total": 1, "up": 0})

        restarted = _spawn(["worker"], tmp_path, "restarted", env, port=port)
        try:
            wait_until_serving(restarted.url, restarted.process, timeout=60, path="/health")
            served = httpx.post(stack.url + "/v1/chat/completions", json=body, timeout=10)
            assert served.status_code == 200, served.text
            assert "back again" in served.json()["choices"][0]["message"]["content"]
            health = httpx.get(stack.url + "/health", timeout=5)
            assert (health.status_code, health.json()["workers"]) == (200, {"total": 1, "up": 1})
            assert all(w["up"] for w in stack.inflight()["workers"])  # type: ignore[union-attr]
        finally:
            stop_process(restarted.process, grace=5)


@pytest.fixture(scope="module")
def echo_worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    """One real worker behind the frontends below that try it after a refusing server:
    a worker's state lives in the frontend, so each test's own frontend sees it fresh
    (a worker start is ~1.3 CPU-s of imports)."""
    worker = _spawn(["worker"], tmp_path_factory.mktemp("echo-worker"), "worker")
    try:
        wait_until_serving(worker.url, worker.process, timeout=60, path="/health")
        yield worker
    finally:
        stop_process(worker.process, grace=5)


@contextlib.contextmanager
def _frontend_with(
    handler: type[http.server.BaseHTTPRequestHandler], worker: Proc, tmp_path: Path,
    *options: str,
) -> Iterator[tuple[Proc, str]]:
    """A frontend over a stub worker answering with `handler` (first) and a real echo
    worker: the frontend and the stub's URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    stub = f"http://127.0.0.1:{server.server_address[1]}"
    fe = _spawn(["frontend", "--worker", stub, "--worker", worker.url, *options],
                tmp_path, "frontend")
    try:
        wait_until_serving(fe.url, fe.process, timeout=60, path="/health")
        yield fe, stub
    finally:
        stop_process(fe.process, grace=5)
        server.shutdown()


class _Refusing(http.server.BaseHTTPRequestHandler):
    """A worker (or the proxy in front of it) that refuses every call with ``status``."""

    status = 429

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = b'{"error": "refused"}'
        self.send_response(self.status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.parametrize(("status", "reason"), [(429, "status_429"), (421, "status_421"),
                                              (307, "status_other"), (201, "status_other")])
def test_a_worker_that_cannot_take_the_request_sends_it_to_another(
    tmp_path: Path, status: int, reason: str, echo_worker: Proc
) -> None:
    # 429 (shedding load) and 421 (misdirected) say the worker cannot take this request
    # now, not that the request is wrong: they were answered 502 'worker rejected the
    # request' with the other worker idle, and the refusing worker kept getting traffic.
    # So was a redirect (a proxy sending http to https) or a 2xx that is no work stream,
    # logged as a 4xx and final to the SDKs: one request in N failed for good.
    refusing = type("Refusing", (_Refusing,), {"status": status})
    with _frontend_with(refusing, echo_worker, tmp_path, "--debug-endpoints") as (fe, refuser):
        body = {"model": "echo", "messages": [{"role": "user", "content": "elsewhere"}]}
        reply = httpx.post(fe.url + "/v1/chat/completions", json=body, timeout=10)
        assert reply.status_code == 200, reply.text
        assert "elsewhere" in reply.json()["choices"][0]["message"]["content"]
        (retry,) = [x for x in fe.lines() if x.get("event") == "dispatch.retry"]
        assert (retry["reason"], retry["marked_down"]) == (reason, True), retry
        ups = {w["url"]: w["up"] for w in httpx.get(fe.url + "/debug/inflight").json()["workers"]}
        assert ups == {refuser: False, echo_worker.url: True}


class _EndlessError(http.server.BaseHTTPRequestHandler):
    """A worker (or its proxy) whose 503 body never ends: 64 KiB every 10 ms."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(503)
        self.send_header("content-type", "text/plain")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        chunk = b"%x\r\n%s\r\n" % (65536, b"x" * 65536)
        try:
            while True:
                self.wfile.write(chunk)
                self.wfile.flush()
                time.sleep(0.01)
        except OSError:
            pass  # the frontend hung up: what it should do

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_refusal_whose_body_never_ends_is_left_at_once(
    tmp_path: Path, echo_worker: Proc
) -> None:
    # The frontend read a refusal's body to its end before trying the next worker: one
    # that never ends held the request for the whole first-byte budget (and was kept in
    # memory as it came), then counted as a timeout.
    with _frontend_with(_EndlessError, echo_worker, tmp_path,
                        "--first-byte-timeout", "5") as (fe, _):
        body = {"model": "echo", "messages": [{"role": "user", "content": "next one"}]}
        reply = httpx.post(fe.url + "/v1/chat/completions", json=body, timeout=30)
        assert reply.status_code == 200, reply.text
        assert "next one" in reply.json()["choices"][0]["message"]["content"]
        (retry,) = [x for x in fe.lines() if x.get("event") == "dispatch.retry"]
        assert (retry["reason"], retry["marked_down"]) == ("status_5xx", True), retry


class _ConflictToClose(http.server.BaseHTTPRequestHandler):
    """A worker's proxy that frames its 409 by closing the connection (no length, not
    chunked: RFC 9112 6.3's last rule)."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(409)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"error": "request id already in flight"}')
        self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_conflict_whose_body_the_close_ends_is_a_conflict(
    tmp_path: Path, echo_worker: Proc
) -> None:
    # The refusal's body could only end as a lost connection: the frontend retried for
    # reason `connect` and marked a worker down that had only refused one id.
    with _frontend_with(_ConflictToClose, echo_worker, tmp_path,
                        "--debug-endpoints") as (fe, refuser):
        body = {"model": "echo", "messages": [{"role": "user", "content": "again"}]}
        replies = [httpx.post(fe.url + "/v1/chat/completions", json=body, timeout=10)
                   for _ in range(2)]  # round-robin: one of them asks the refuser first
        assert [r.status_code for r in replies] == [200, 200], [r.text for r in replies]
        retries = [x for x in fe.lines() if x.get("event") == "dispatch.retry"]
        assert retries, "no request asked the refusing worker"
        assert {(r["reason"], r["marked_down"]) for r in retries} == {("conflict", False)}
        ups = {w["url"]: w["up"] for w in httpx.get(fe.url + "/debug/inflight").json()["workers"]}
        assert ups == {refuser: True, echo_worker.url: True}


def test_a_body_over_the_workers_limit_is_a_413_not_a_broken_service(tmp_path: Path) -> None:
    # The frontend takes bodies up to its --max-body-bytes, the workers envelopes up to
    # their own max_body_bytes. A body between the two was answered 502 'worker rejected
    # the request', a broken service to the SDKs (which retried it twice); it is too
    # large for this deployment, which the caller can act on.
    env = {"RIDTRACE_WORKER_MAX_BODY_BYTES": "4096"}
    with start_stack(tmp_path, workers=[[]], env=env) as stack:
        big = {"model": "echo", "max_tokens": 4,
               "messages": [{"role": "user", "content": "x" * 8000}]}
        refused = httpx.post(stack.url + "/v1/chat/completions", timeout=10, json=big)
        assert refused.status_code == 413, refused.text
        error = refused.json()["error"]
        assert (error["message"], error["type"]) == (
            "request body too large for the workers", "invalid_request_error")
        assert refused.headers["x-should-retry"] == "false"
        sdk = anthropic.Anthropic(base_url=stack.url, api_key="x", max_retries=0)
        with pytest.raises(anthropic.APIStatusError) as anthropic_refused:
            sdk.messages.create(model="echo", max_tokens=4,
                                messages=[{"role": "user", "content": "x" * 8000}])
        assert anthropic_refused.value.status_code == 413
        assert anthropic_refused.value.body["error"]["type"] == "request_too_large"
        # The request's own line keeps what the worker said.
        end = stack.frontend.wait_for_event(refused.headers["x-server-request-id"],
                                            "request.end")
        assert "worker answered 413" in end["error"]
        # Not the worker's fault: it stays in rotation and serves the next caller.
        assert all(w["up"] for w in stack.inflight()["workers"])  # type: ignore[union-attr]
        small = {**big, "messages": [{"role": "user", "content": "hi"}]}
        served = httpx.post(stack.url + "/v1/chat/completions", timeout=10, json=small)
        assert served.status_code == 200, served.text
