"""What a default `ridtrace serve` shows a stranger: no API docs, no server banner, no CORS.

Run for real (the banner is uvicorn's, added below the app), with the defaults an
operator gets: no key, no ``--debug-endpoints``.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from tests.frontend_plugin.conftest import Stack, start_stack

DOCS = ("/docs", "/redoc", "/openapi.json", "/docs/oauth2-redirect")


@pytest.fixture(scope="module")
def defaults(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with start_stack(tmp_path_factory.mktemp("defaults"), workers=[[]],
                     debug_endpoints=False) as stack:
        yield stack


@pytest.fixture(scope="module")
def any_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Frontend and worker answering any Host (`--allowed-host '*'`), as behind a proxy."""
    flags = ["--allowed-host", "*"]
    with start_stack(tmp_path_factory.mktemp("any_host"), workers=[flags], frontend=flags,
                     debug_endpoints=False) as stack:
        yield stack


def test_api_docs_are_not_served_by_default(defaults: Stack) -> None:
    with httpx.Client(base_url=defaults.url, timeout=30) as client:
        for path in DOCS:
            response = client.get(path)
            assert response.status_code == 404, (path, response.text[:100])
            assert response.json()["error"]["message"] == f"Not Found: GET {path}"
        assert client.get("/debug/inflight").status_code == 404


def test_no_server_banner_on_any_answer(defaults: Stack) -> None:
    chat = {"messages": [{"role": "user", "content": "banner"}]}
    answers = []
    with httpx.Client(timeout=30) as client:
        for url in (defaults.url, defaults.workers[0].url):
            answers += [client.get(url + "/health"), client.get(url + "/metrics"),
                        client.get(url + "/no-such-path")]
        answers += [client.post(defaults.url + "/v1/chat/completions", json=chat),
                    client.post(defaults.url + "/v1/chat/completions", json={**chat, "stream": True}),
                    client.post(defaults.url + "/v1/chat/completions", content=b"{")]
    assert [r.status_code for r in answers] == [200, 200, 404] * 2 + [200, 200, 400]
    for response in answers:
        assert "server" not in response.headers, (response.url, response.headers)


def test_a_cross_origin_preflight_is_not_granted(defaults: Stack) -> None:
    # No CORS middleware: a web page on another origin cannot read any answer.
    preflight = httpx.options(defaults.url + "/v1/chat/completions", timeout=30, headers={
        "origin": "https://evil.example", "access-control-request-method": "POST",
        "access-control-request-headers": "content-type, authorization"})
    assert preflight.status_code == 405
    assert not any(name.startswith("access-control-") for name in preflight.headers)


def test_the_docs_come_back_with_the_debug_endpoints(stack: Stack) -> None:
    # (the shared stack runs with --debug-endpoints)
    with httpx.Client(base_url=stack.url, timeout=30) as client:
        schema = client.get("/openapi.json").json()
        assert schema["info"]["title"] == "ridtrace frontend"
        assert list(schema["paths"]["/v1/models"]) == ["get"]  # HEAD stays out of it
        assert client.get("/docs").status_code == 200
        # The API's own routes, which the fast path serves: the docs listed none of them.
        posts = sorted(path for path, operations in schema["paths"].items()
                       if "post" in operations)
        assert posts == sorted([
            "/v1/chat/completions", "/v1/completions", "/v1/responses",
            "/v1/responses/input_tokens", "/v1/messages", "/v1/messages/count_tokens",
            "/inference/v1/generate", "/generate"])
        chat = schema["paths"]["/v1/chat/completions"]["post"]
        assert "text/event-stream" in chat["responses"]["200"]["content"]
        assert list(schema["paths"]["/health"]) == ["get"]
        ids = [op["operationId"] for ops in schema["paths"].values() for op in ops.values()]
        assert len(ids) == len(set(ids))


def test_head_is_answered_wherever_get_is(defaults: Stack) -> None:
    # RFC 9110 section 9.1: a general-purpose server supports GET and HEAD; `curl -I`
    # on the model list got 405 (only /health and /metrics took HEAD).
    with httpx.Client(base_url=defaults.url, timeout=30) as client:
        for path, status in (("/v1/models", 200), ("/v1/models/echo", 200),
                             ("/v1/models/other", 404), ("/health", 200), ("/metrics", 200)):
            head = client.head(path)
            assert (head.status_code, head.content) == (status, b""), path
            if path != "/metrics":  # whose counts move between the two requests
                assert head.headers["content-length"] == str(len(client.get(path).content))
            # And a 405 says so: the model routes answered HEAD but named only GET.
            refused = client.delete(path)
            assert (refused.status_code, refused.headers["allow"]) == (405, "GET, HEAD"), path


def test_a_trailing_slash_is_a_404_not_a_redirect_to_the_callers_host(any_host: Stack) -> None:
    # Starlette redirected to the other spelling with a Location built from the Host
    # header: anyone could make the server send a caller (and its retry) elsewhere.
    # (Servers that answer for any Host, as behind a proxy: on loopback alone the Host
    # check refuses evil.example before any route.)
    evil = {"host": "evil.example"}
    stack = any_host
    with httpx.Client(timeout=30, follow_redirects=False) as client:
        answers = [
            client.post(stack.url + "/v1/chat/completions/", headers=evil, json={}),
            client.get(stack.url + "/v1/models/", headers=evil),
            client.get(stack.workers[0].url + "/health/", headers=evil),
        ]
    for response in answers:
        assert response.status_code == 404, (response.url, response.headers)
        assert "location" not in response.headers
        assert "evil.example" not in response.text
    assert answers[0].json()["error"]["message"] == "Not Found: POST /v1/chat/completions/"


def _status_for_host(url: str, host: str) -> int:
    return httpx.get(url + "/health", headers={"host": host}, timeout=30).status_code


def test_a_host_that_is_not_this_servers_is_refused_on_loopback(defaults: Stack) -> None:
    # DNS rebinding: a page whose name re-resolves to 127.0.0.1 is same-origin with a
    # keyless server on loopback and may post JSON to it; its requests still carry the
    # page's name in Host, which a server on loopback has no reason to answer for.
    for url in (defaults.url, defaults.workers[0].url):
        port = url.rsplit(":", 1)[1]
        answer = httpx.post(url + "/v1/chat/completions", timeout=30,
                            headers={"host": f"rebound.example:{port}"},
                            json={"messages": [{"role": "user", "content": "x"}]})
        assert answer.status_code == 421, (url, answer.text)
        assert answer.json()["error"]["code"] == "misdirected_request"
        # Every loopback address is this machine (127.0.0.2 got 421, where the docs
        # say loopback addresses are answered); an address elsewhere is not.
        for own in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "LOCALHOST.",
                    "127.0.0.2", f"127.1.2.3:{port}", f"[::ffff:127.0.0.1]:{port}",
                    "[::FFFF:7f00:2]"):  # IPv4-mapped: the address Linux connects to
            assert _status_for_host(url, own) == 200, (url, own)
        assert _status_for_host(url, "10.0.0.1") == 421
        assert _status_for_host(url, "[::ffff:10.0.0.1]") == 421


def _status_for_target(url: str, target: str, host: str) -> int:
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
                     .encode())
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return int(answer.split(b" ", 2)[1])


def test_an_absolute_form_target_is_checked_by_its_own_host(defaults: Stack) -> None:
    # RFC 9112 section 3.2.2: a server receiving an absolute-form target uses its host,
    # not Host's. The check read Host alone: 'GET http://rebound.example/health' with
    # Host: 127.0.0.1 was answered, and the target naming this server refused (421).
    for url in (defaults.url, defaults.workers[0].url):
        port = url.rsplit(":", 1)[1]
        assert _status_for_target(url, "http://rebound.example/health", "127.0.0.1") == 421
        assert _status_for_target(url, f"http://127.0.0.1:{port}/health",
                                  "rebound.example") == 200
        assert _status_for_target(url, f"http://[::1]:{port}/health", "other") == 200
        assert _status_for_target(url, "/health", "127.0.0.1") == 200


def test_allowed_host_adds_a_name_to_answer_for(tmp_path: Path) -> None:
    with start_stack(tmp_path, workers=[[]], debug_endpoints=False,
                     frontend=["--allowed-host", "gateway.internal"]) as stack:
        assert _status_for_host(stack.url, "gateway.internal:443") == 200
        assert _status_for_host(stack.url, "127.0.0.1") == 200
        assert _status_for_host(stack.url, "other.internal") == 421


def _line_for(proc: object, predicate: object, timeout: float = 30.0) -> dict[str, object]:
    """The first log line of `proc` that `predicate` accepts, waiting for it to be written."""
    deadline = time.monotonic() + timeout
    while True:
        found = [x for x in proc.lines() if predicate(x)]  # type: ignore[attr-defined,operator]
        if found:
            return found[0]
        if time.monotonic() > deadline:
            raise AssertionError(f"no such line in {proc.log}")  # type: ignore[attr-defined]
        time.sleep(0.02)


def test_a_misdirected_request_has_its_ids_and_a_log_line(defaults: Stack) -> None:
    # The check wrapped the whole app: a 421 carried no x-server-request-id, and neither
    # the frontend nor the worker logged anything, so an operator whose proxy forwards
    # its public Host (or who was probed by rebinding) saw refusals nowhere.
    host = "rebound.example" + "x" * 301 + ":1"  # well-formed: one that is not gets 400
    answer = httpx.post(defaults.url + "/v1/chat/completions", timeout=30,
                        headers={"host": host.encode("latin-1"), "x-request-id": "misdirected-1"},
                        json={"messages": [{"role": "user", "content": "x"}]})
    assert answer.status_code == 421
    assert answer.headers["x-request-id"] == "misdirected-1"
    server_id = answer.headers["x-server-request-id"]
    end = _line_for(defaults.frontend, lambda x: x.get("event") == "request.end"
                    and x.get("request_id") == server_id)
    assert end["status"] == 421 and end["x_request_id"] == "misdirected-1"
    error = str(end["error"])
    assert error.startswith("misdirected request: this server does not answer for Host "
                            "'rebound.examplexxx")
    assert error.endswith("...[318 chars]'")  # capped: the Host is the caller's text

    worker = defaults.workers[0]
    refused = httpx.post(worker.url + "/v1/work", headers={"host": "rebound.example"},
                         content=b"{}", timeout=30)
    assert refused.status_code == 421 and "x-server-request-id" in refused.headers
    line = _line_for(worker, lambda x: x.get("event") == "worker.refused"
                     and x.get("status") == 421)
    assert line["outcome"] == "invalid" and line["level"] == "WARN"
    assert "Host 'rebound.example" in str(line["error"])


def _raw_answer(url: str, host: str, path: str = "/health",
                extra: str = "") -> tuple[int, dict[str, str], bytes]:
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n"
                     .encode("latin-1"))
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *fields = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (f.partition(":") for f in fields)}
    return int(status_line.split(" ", 2)[1]), headers, body


NOT_HOSTS = ("a b", "[::1", "127.0.0.1:abc", "u@host", "", "::1", "h\u00e9", "localhost:99999")


@pytest.mark.parametrize("servers", ["defaults", "any_host"])
def test_a_host_header_that_is_no_host_is_a_400(
    servers: str, request: pytest.FixtureRequest
) -> None:
    # RFC 9112 section 3.2: a request whose Host is not uri-host[:port] gets 400. It got
    # 421 pointing at --allowed-host (which could never match it), and with '*' it was
    # served.
    stack: Stack = request.getfixturevalue(servers)
    for url in (stack.url, stack.workers[0].url):
        for host in NOT_HOSTS:
            status, _, body = _raw_answer(url, host)
            assert status == 400, (url, host, body)
            assert orjson.loads(body)["error"]["code"] == "invalid_host_header", (url, host)
        assert _raw_answer(url, "localhost:")[0] == 200  # an empty port is the default one
    assert _raw_answer(stack.url, "a b", "/v1/messages")[2].startswith(b'{"type":"error"')


def test_a_400_for_its_host_has_its_ids_and_a_log_line(defaults: Stack) -> None:
    host = "rebound.example\u00e9:1" + "x" * 300
    status, headers, body = _raw_answer(defaults.url, host, "/v1/messages",
                                        "x-request-id: not-a-host-1\r\n")
    assert status == 400 and headers["x-request-id"] == "not-a-host-1"
    error = orjson.loads(body)
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert error["request_id"] == headers["request-id"]
    end = _line_for(defaults.frontend, lambda x: x.get("event") == "request.end"
                    and x.get("request_id") == headers["x-server-request-id"])
    assert end["status"] == 400 and end["x_request_id"] == "not-a-host-1"
    assert str(end["error"]).startswith("invalid Host header 'rebound.example\u00e9:1xxx")
    assert "...[318 chars]'" in str(end["error"])  # capped: the Host is the caller's text

    worker = defaults.workers[0]
    assert _raw_answer(worker.url, "u@" + worker.url[7:])[0] == 400
    line = _line_for(worker, lambda x: x.get("event") == "worker.refused"
                     and "'u@127.0.0.1:" in str(x.get("error")))
    assert line["outcome"] == "invalid" and line["status"] == 400


@pytest.mark.parametrize("allow", ["HEAD, GET", "GET, HEAD", "POST, HEAD, GET", "GET"])
def test_a_405_names_its_methods_in_one_order_whatever_the_hash_seed(allow: str) -> None:
    # Starlette joins a route's methods from a set: 'HEAD, GET' in some processes,
    # 'GET, HEAD' in others, as PYTHONHASHSEED fell.
    from ridtrace.frontend_plugin.allow_header import allow_in_order

    want = {"HEAD, GET": "GET, HEAD", "GET, HEAD": "GET, HEAD",
            "POST, HEAD, GET": "GET, HEAD, POST", "GET": "GET"}[allow]
    assert allow_in_order({"Allow": allow, "x": "y"}) == {"Allow": want, "x": "y"}
