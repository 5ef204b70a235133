"""What callers and probes never see: worker addresses, credentials, exception classes.

A frontend whose ``--worker`` URL carries ``user:password@`` is run for real: callers get
the API's error with a fixed phrase, the frontend's log keeps the detail (under the
request's id) without the password, and ``/health`` shows no worker URL.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import httpx
import orjson

from tests.frontend_plugin.conftest import Proc, start_stack
from tests.frontend_plugin.traffic import ROUTES, build, extract
from tests.support.servers import free_port

KEY = "sk-internals-test"
PASSWORD = "secretpw-4c1e"
USERINFO = f"user:{PASSWORD}"
AUTH = {"authorization": f"Bearer {KEY}"}


def _calls(url: str, marker: str) -> list[tuple[str, bool, httpx.Response]]:
    """Every route, streaming and not, at once."""

    async def one(client: httpx.AsyncClient, route: str, stream: bool) -> tuple[
            str, bool, httpx.Response]:
        path, headers, body = build(route, marker, None, stream)
        return route, stream, await client.post(url + path, headers={**headers, **AUTH},
                                                json=body)

    async def main() -> list[tuple[str, bool, httpx.Response]]:
        async with httpx.AsyncClient(timeout=60) as client:
            return list(await asyncio.gather(
                *(one(client, r, s) for r in ROUTES for s in (False, True))))

    return asyncio.run(main())


def _assert_nothing_internal(text: str, port: int) -> None:
    for secret in (PASSWORD, "127.0.0.1", str(port), "Error:", "Errno", "http://"):
        assert secret not in text, (secret, text)
    # The worker URL's user name before its password or `***` (the echo's own role
    # label, `user:` then a space or the token's end, is a chat reply's second token).
    assert re.search(r'user:[^\s"]', text) is None, text


def _ends(frontend: Proc, answers: list[tuple[str, bool, httpx.Response]]
          ) -> dict[str, dict[str, object]]:
    """The request.end line of each answer, by request id.

    A line is written once its response went out, so the caller may be done first:
    wait for the lines themselves (a condition, not a nap).
    """
    wanted = {response.headers["x-server-request-id"] for _, _, response in answers}
    deadline = time.monotonic() + 20
    while True:
        ends = {str(x["request_id"]): x for x in frontend.lines()
                if x.get("event") == "request.end" and x.get("endpoint")}
        if wanted <= ends.keys() or time.monotonic() > deadline:
            return ends
        time.sleep(0.02)


def _probe(url: str) -> tuple[httpx.Response, httpx.Response]:
    """GET and HEAD /health the way a load balancer does: no key."""
    with httpx.Client(base_url=url, timeout=10) as client:
        return client.get("/health"), client.head("/health")


def test_a_dead_worker_is_worker_unavailable_to_callers_and_detailed_in_the_log(
    tmp_path: Path,
) -> None:
    dead = free_port()  # nothing listens there: every connect is refused
    frontend = ["--api-key", KEY, "--worker", f"http://{USERINFO}@127.0.0.1:{dead}"]
    # A cooldown far longer than the test: the worker stays marked down for the probe
    # after the failures, whatever the machine's speed.
    env = {"RIDTRACE_FRONTEND_DOWN_COOLDOWN": "600"}
    with start_stack(
        tmp_path, workers=[], frontend=frontend, debug_endpoints=False, env=env,
    ) as stack:
        before = _probe(stack.url)
        answers = _calls(stack.url, "dead worker")
        after = _probe(stack.url)
        ends = _ends(stack.frontend, answers)
        log = stack.frontend.log.read_bytes()
    # Nothing failed yet, so nothing is marked down: the frontend is serving.
    assert before[0].status_code == before[1].status_code == 200
    assert before[0].json() == {"status": "ok", "workers": {"total": 1, "up": 1}}
    assert before[1].content == b""
    # Its only worker failed and is marked down: a balancer should go elsewhere.
    assert after[0].status_code == after[1].status_code == 503
    assert after[0].json() == {"status": "unavailable", "workers": {"total": 1, "up": 0}}
    for response in (*before, *after):
        _assert_nothing_internal(response.text, dead)
    for route, stream, response in answers:
        # A failure before the first chunk: the API's JSON error, streaming or not.
        assert response.status_code == 502, (route, stream, response.text)
        _, error, body = extract(route, False, response.content)
        assert error == "worker unavailable", (route, stream, body)
        kind = body["error"]["type"]
        assert kind == ("api_error" if route == "messages" else "server_error"), body
        _assert_nothing_internal(response.text, dead)
        # The detail is in this request's own request.end line.
        end = ends[response.headers["x-server-request-id"]]
        assert end["status"] == 502
        assert f"127.0.0.1:{dead}" in str(end["error"]), end
        assert "Connection refused" in str(end["error"]) or "connect" in str(end["error"]), end
    retries = [orjson.loads(x) for x in log.splitlines() if b'"dispatch.retry"' in x]
    assert retries and {r["worker"] for r in retries} == {f"http://***@127.0.0.1:{dead}"}
    assert PASSWORD.encode() not in log
    assert PASSWORD.encode() not in stack.frontend.stderr.read_bytes()


def test_a_silent_worker_is_worker_timed_out_in_bodies_and_in_stream_errors(
    tmp_path: Path,
) -> None:
    # Two tokens, then silence: every stream has started when the chunk timeout ends it.
    with start_stack(
        tmp_path, workers=[["--hang-after-tokens", "2"]], frontend=["--api-key", KEY,
                                                                     "--chunk-timeout", "1"],
        debug_endpoints=False, worker_userinfo=USERINFO,
    ) as stack:
        answers = _calls(stack.url, "silent worker a b c d e f")
        ends = _ends(stack.frontend, answers)
        log = stack.frontend.log.read_bytes()
    port = stack.workers[0].port
    for route, stream, response in answers:
        _, error, _ = extract(route, stream, response.content)
        # Status codes as before: the stream already said 200, a plain answer is a 504.
        assert response.status_code == (200 if stream else 504), (route, stream)
        assert error == "worker timed out", (route, stream, response.text)
        _assert_nothing_internal(response.text, port)
        end = ends[response.headers["x-server-request-id"]]
        assert end["error"] == f"worker http://***@127.0.0.1:{port} sent nothing for 1.0s", end
        assert end["worker"] == f"http://***@127.0.0.1:{port}", end
    assert PASSWORD.encode() not in log


def test_the_total_timeout_is_request_timed_out_with_the_limit_in_the_log(
    tmp_path: Path,
) -> None:
    # Tokens keep coming, slower than the whole request may take: the total timeout ends
    # it, and the log says which limit ran out and on which worker.
    with start_stack(
        tmp_path, workers=[["--token-delay", "0.4"]],
        frontend=["--api-key", KEY, "--total-timeout", "1", "--chunk-timeout", "10"],
        debug_endpoints=False, worker_userinfo=USERINFO,
    ) as stack:
        answers = _calls(stack.url, "slow worker a b c d e f g h")
        ends = _ends(stack.frontend, answers)
    port = stack.workers[0].port
    for route, stream, response in answers:
        _, error, _ = extract(route, stream, response.content)
        assert response.status_code == (200 if stream else 504), (route, stream)
        assert error == "request timed out", (route, stream, response.text)
        # (the echoed prompt says "user:", so not `_assert_nothing_internal`)
        assert PASSWORD not in response.text and "127.0.0.1" not in response.text
        end = ends[response.headers["x-server-request-id"]]
        assert end["error"] == ("no complete answer within the total timeout of 1s "
                                f"(worker http://***@127.0.0.1:{port})"), end
