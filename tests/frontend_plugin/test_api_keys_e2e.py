"""API keys on a real `ridtrace serve frontend`: the official SDKs, error shapes, logs, spans."""

from __future__ import annotations

import platform
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from tests.frontend_plugin.conftest import Stack, start_stack
from tests.support.otlp_receiver import OtlpReceiver, otlp_receiver

KEY = "sk-ridtrace-test-key-7f3a9c"
OTHER_KEY = "sk-second-key-41d2"
WRONG = "sk-wrong-key-000"
ENV_ONLY = "sk-from-the-environment"


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    with otlp_receiver() as running:
        yield running


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory, receiver: OtlpReceiver) -> Iterator[Stack]:
    """A frontend with two --api-key keys (which replace RIDTRACE_API_KEYS's), debug
    endpoints left at their default (off), spans exported to ``receiver``."""
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50",
           "RIDTRACE_API_KEYS": ENV_ONLY}
    with start_stack(
        tmp_path_factory.mktemp("keyed"), workers=[[]],
        frontend=["--api-key", KEY, "--api-key", OTHER_KEY],
        env=env, debug_endpoints=False,
    ) as stack:
        yield stack


def _oai(stack: Stack, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=stack.url + "/v1", api_key=key, max_retries=0)


def _claude(stack: Stack, key: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=stack.url, api_key=key, max_retries=0)


def _openai_calls(client: openai.OpenAI) -> list[tuple[str, Any]]:
    messages: Any = [{"role": "user", "content": "keyed"}]
    return [
        ("chat", lambda: client.chat.completions.create(model="echo", messages=messages)),
        ("chat stream", lambda: "".join(
            c.choices[0].delta.content or "" for c in client.chat.completions.create(
                model="echo", messages=messages, stream=True) if c.choices)),
        ("completions", lambda: client.completions.create(model="echo", prompt="keyed")),
        ("completions stream", lambda: "".join(
            c.choices[0].text for c in client.completions.create(
                model="echo", prompt="keyed", stream=True))),
        ("responses", lambda: client.responses.create(model="echo", input="keyed")),
        ("responses stream", lambda: list(
            client.responses.create(model="echo", input="keyed", stream=True))),
    ]


def _anthropic_calls(client: anthropic.Anthropic) -> list[tuple[str, Any]]:
    messages: Any = [{"role": "user", "content": "keyed"}]
    return [
        ("messages", lambda: client.messages.create(model="echo", max_tokens=32, messages=messages)),
        ("messages stream", lambda: list(client.messages.create(
            model="echo", max_tokens=32, messages=messages, stream=True))),
    ]


@pytest.mark.parametrize("key", [WRONG, ENV_ONLY])
def test_openai_sdk_raises_authentication_error_with_a_wrong_key(keyed: Stack, key: str) -> None:
    # The SDKs refuse to send a request with no key at all; a missing key is checked
    # with plain HTTP below. The environment's key is replaced by the command line's.
    client = _oai(keyed, key)
    for name, call in _openai_calls(client):
        with pytest.raises(openai.AuthenticationError) as info:
            call()
        assert info.value.status_code == 401, name
        assert info.value.code == "invalid_api_key", name


def test_anthropic_sdk_raises_authentication_error_with_a_wrong_key(keyed: Stack) -> None:
    client = _claude(keyed, WRONG)
    for name, call in _anthropic_calls(client):
        with pytest.raises(anthropic.AuthenticationError) as info:
            call()
        assert info.value.status_code == 401, name
        assert info.value.body["error"]["type"] == "authentication_error", name  # type: ignore[index]


@pytest.mark.parametrize("key", [KEY, OTHER_KEY])
def test_both_sdks_work_with_either_configured_key(keyed: Stack, key: str) -> None:
    for name, call in _openai_calls(_oai(keyed, key)):
        assert call(), name  # OpenAI's SDK sends Authorization: Bearer
    for name, call in _anthropic_calls(_claude(keyed, key)):
        assert call(), name  # Anthropic's sends x-api-key
    reply = _oai(keyed, key).chat.completions.create(
        model="echo", messages=[{"role": "user", "content": "keyed text"}])
    assert "keyed text" in (reply.choices[0].message.content or "")


def test_error_shapes_without_a_key_and_open_health(keyed: Stack) -> None:
    with httpx.Client(base_url=keyed.url, timeout=30) as client:
        chat = client.post("/v1/chat/completions", json={"messages": []})
        assert chat.status_code == 401
        assert chat.json() == {"error": {
            "message": chat.json()["error"]["message"], "type": "invalid_request_error",
            "param": None, "code": "invalid_api_key"}}
        # RFC 6750 (3.1): no error code without credentials, invalid_token for a wrong key.
        assert chat.headers["www-authenticate"] == 'Bearer realm="ridtrace"'
        messages = client.post("/v1/messages", json={}, headers={"x-api-key": WRONG})
        assert messages.status_code == 401
        assert messages.headers["www-authenticate"] == (
            'Bearer realm="ridtrace", error="invalid_token"')
        twice = client.get("/v1/models", headers=[("x-api-key", KEY), ("x-api-key", KEY)])
        assert twice.status_code == 401
        assert twice.headers["www-authenticate"] == (
            'Bearer realm="ridtrace", error="invalid_request"')
        assert messages.json()["type"] == "error"
        assert messages.json()["error"]["type"] == "authentication_error"
        for path in ("/generate", "/inference/v1/generate"):
            assert client.post(path, json={}).json()["error"]["code"] == "invalid_api_key"
        assert client.get("/v1/models").status_code == 401
        assert client.get("/health").status_code == 200
        bearer_any_case = {"authorization": f"bearer {KEY}"}
        assert client.get("/v1/models", headers=bearer_any_case).status_code == 200


def test_debug_endpoint_is_off_by_default(keyed: Stack) -> None:
    auth = {"authorization": f"Bearer {KEY}"}
    assert httpx.get(keyed.url + "/debug/inflight", headers=auth, timeout=10).status_code == 404
    worker = keyed.workers[0].url
    assert httpx.get(worker + "/debug/inflight", timeout=10).status_code == 404
    assert httpx.post(worker + "/debug/gate/open", timeout=10).status_code == 404  # no --gate


def test_refusal_has_a_request_id_and_a_request_end_and_no_key_anywhere(
    keyed: Stack, receiver: OtlpReceiver,
) -> None:
    response = httpx.post(
        keyed.url + "/v1/chat/completions", headers={"authorization": f"Bearer {WRONG}",
                                                     "x-api-key": WRONG, "x-request-id": "refused-1"},
        json={"messages": [{"role": "user", "content": "x"}]}, timeout=30,
    )
    assert response.status_code == 401
    request_id = response.headers["x-server-request-id"]
    assert response.headers["x-request-id"] == "refused-1"
    ok = httpx.post(keyed.url + "/v1/chat/completions", headers={"x-api-key": KEY},
                    json={"messages": [{"role": "user", "content": "x"}]}, timeout=30)
    assert ok.status_code == 200
    spans = receiver.wait_for(1)
    while not any(s.attributes.get("request_id") == request_id for s in spans):
        spans = receiver.wait_for(len(spans) + 1)
    ends = [line for line in keyed.frontend.lines()
            if line.get("event") == "request.end" and line.get("request_id") == request_id]
    assert len(ends) == 1
    assert ends[0]["outcome"] == "unauthorized" and ends[0]["status"] == 401
    assert ends[0]["x_request_id"] == "refused-1"
    logs = b"".join(p.read_bytes() for p in Path(keyed.frontend.log).parent.glob("*.jsonl"))
    for secret in (KEY, OTHER_KEY, WRONG):
        assert secret.encode() not in logs
        for span in receiver.spans:
            assert secret not in repr(span), span


def test_a_refused_anthropic_call_carries_the_server_id_the_sdk_reads(keyed: Stack) -> None:
    with pytest.raises(anthropic.AuthenticationError) as refused:
        _claude(keyed, WRONG).messages.create(
            model="echo", max_tokens=8, messages=[{"role": "user", "content": "x"}])
    headers = refused.value.response.headers
    assert refused.value.request_id == headers["x-server-request-id"] == headers["request-id"]
    # Anthropic's SDK may also send the key as a bearer token (auth_token=).
    bearer = anthropic.Anthropic(base_url=keyed.url, auth_token=KEY, max_retries=0)
    reply = bearer.messages.create(model="echo", max_tokens=8,
                                   messages=[{"role": "user", "content": "bearer"}])
    assert reply._request_id is not None and "bearer" in reply.content[0].text  # type: ignore[union-attr]


def test_the_anthropic_sdk_refused_outside_messages_reads_its_own_error(
    keyed: Stack,
) -> None:
    # models.list with a wrong key got OpenAI's 401 body (type invalid_request_error)
    # and no request-id: the SDK's error had type and request_id wrong or None.
    with pytest.raises(anthropic.AuthenticationError) as refused:
        _claude(keyed, WRONG).models.list()
    assert refused.value.type == "authentication_error"
    assert refused.value.request_id == refused.value.response.headers["x-server-request-id"]
    with pytest.raises(openai.AuthenticationError) as openai_refused:
        _oai(keyed, WRONG).models.list()
    assert openai_refused.value.code == "invalid_api_key"


@pytest.mark.parametrize("name", ["authorization", "x-api-key"])
def test_a_repeated_key_header_is_refused_even_when_one_value_is_right(
    keyed: Stack, name: str,
) -> None:
    # Each repeat was one more guess: one request tried thousands of keys and was
    # logged, counted and rate-limited as a single refusal (or a single success).
    value = (lambda key: f"Bearer {key}") if name == "authorization" else (lambda key: key)
    guesses = [(name, value(f"sk-guess-{i:04d}")) for i in range(500)]
    with httpx.Client(base_url=keyed.url, timeout=30) as client:
        refused = client.get("/v1/models", headers=[*guesses, (name, value(KEY))])
        assert refused.status_code == 401, refused.text
        assert refused.json()["error"]["code"] == "invalid_api_key"
        assert "more than once" in refused.json()["error"]["message"]
        # One of each header is what the Anthropic SDK sends with api_key and auth_token.
        both = client.get("/v1/models", headers=[("x-api-key", WRONG),
                                                 ("authorization", f"Bearer {KEY}")])
        assert both.status_code == 200


def test_the_open_metrics_name_no_interpreter_release(keyed: Stack) -> None:
    # Open to anyone who can reach the port, as /health is: python_info gave the exact
    # Python release, what 'server: uvicorn' gave before it went.
    for url in (keyed.url, keyed.workers[0].url):
        scrape = httpx.get(url + "/metrics", timeout=10)
        assert scrape.status_code == 200 and "ridtrace_requests_total" in scrape.text
        assert "python_info" not in scrape.text
        assert platform.python_version() not in scrape.text
        assert "process_resident_memory_bytes" in scrape.text  # an operator's, no version


def test_a_refused_request_with_a_body_ends_its_connection(keyed: Stack) -> None:
    # The 401 comes before the body is read; on a kept connection uvicorn went on
    # taking the body to reach the next request, so a caller with no key could push
    # gigabytes (~9.5 GB at ~2 GB/s before a reset) into one connection.
    import socket
    from urllib.parse import urlsplit

    url = urlsplit(keyed.url)
    with socket.create_connection((url.hostname, url.port), timeout=30) as conn:
        conn.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: " + url.netloc.encode()
                     + b"\r\ncontent-type: application/json\r\ncontent-length: 1000000000"
                     + b"\r\n\r\n" + b" " * 65536)
        received = b""
        while chunk := conn.recv(65536):  # ends when the server closes the connection
            received += chunk
    head = received.split(b"\r\n\r\n", 1)[0].lower()
    assert head.startswith(b"http/1.1 401") and b"connection: close" in head


def test_a_refused_request_without_a_body_keeps_its_connection(keyed: Stack) -> None:
    with httpx.Client(base_url=keyed.url) as client:
        first = client.get("/v1/models")
        second = client.get("/v1/models")
    assert first.status_code == second.status_code == 401
    assert "close" not in first.headers.get("connection", "")


def _chunked_with_trailer(stack: Stack, trailer: bytes, header: bytes = b"") -> bytes:
    """The response head (lower-cased) to one chunked completion whose trailer section
    holds ``trailer``, sent in one write (so the server has parsed the trailer by the
    time the app reads the headers)."""
    import socket
    from urllib.parse import urlsplit

    url = urlsplit(stack.url)
    body = b'{"prompt": "trailer", "max_tokens": 2}'
    request = (b"POST /v1/completions HTTP/1.1\r\nHost: " + url.netloc.encode()
               + b"\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n"
               + header + b"connection: close\r\n\r\n" + b"%x\r\n" % len(body) + body
               + b"\r\n0\r\n" + trailer + b"\r\n")
    with socket.create_connection((url.hostname, url.port), timeout=30) as conn:
        conn.sendall(request)
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
    return received.partition(b"\r\n\r\n")[0].lower()


def test_fields_in_a_chunked_trailer_are_not_headers(keyed: Stack) -> None:
    # RFC 9110 6.5.1: a trailer field is not merged into the header section. uvicorn's
    # httptools protocol appended trailer fields to the request's header list, so a key
    # sent after the body (where a proxy that checks or strips headers does not look)
    # was accepted, and a trailer x-request-id became the request's client id.
    key = b"authorization: Bearer " + KEY.encode() + b"\r\n"
    assert _chunked_with_trailer(keyed, key).startswith(b"http/1.1 401")
    trailer_id = b"x-request-id: from-the-trailer\r\n"
    head = _chunked_with_trailer(keyed, b"x-api-key: " + KEY.encode() + b"\r\n" + trailer_id)
    assert head.startswith(b"http/1.1 401")
    # With its key where keys go the request is served, and its trailer is ignored.
    head = _chunked_with_trailer(keyed, trailer_id, header=key)
    assert head.startswith(b"http/1.1 200") and b"from-the-trailer" not in head


def test_a_keyless_request_the_parser_refused_is_logged_as_the_parsers_400(
    keyed: Stack,
) -> None:
    # The 401 came after the parser's 400 had gone out (bad chunk framing in the same
    # read as the headers): request.end said status 400 but outcome "unauthorized",
    # which the log schema defines as a 401 for a key, and the metric counted it so.
    import socket
    from urllib.parse import urlsplit

    url = urlsplit(keyed.url)
    with socket.create_connection((url.hostname, url.port), timeout=30) as conn:
        conn.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: " + url.netloc.encode()
                     + b"\r\ncontent-type: application/json\r\ntransfer-encoding: chunked"
                     + b"\r\nx-request-id: parser-before-key\r\n\r\nzz\r\n")
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
    assert received.startswith(b"HTTP/1.1 400 "), received[:200]
    (end,) = keyed.frontend.wait_for_lines(
        lambda line: line.get("event") == "request.end"
        and line.get("x_request_id") == "parser-before-key", 1)
    assert (end["status"], end["outcome"]) == (400, "ok"), end
