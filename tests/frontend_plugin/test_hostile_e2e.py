"""Hostile bodies get a 4xx JSON error naming the problem; nothing is registered."""

from __future__ import annotations

import gzip
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.frontend_plugin.conftest import Stack, start_stack

CASES = [
    ("/v1/chat/completions", b"[1, 2, 3]", 400, "JSON object"),
    ("/v1/chat/completions", b'{"messages": "hi"}', 400, "messages"),
    ("/v1/chat/completions", b'{"messages": [{"role": "user", "content": "x"}], "max_tokens": 1e12}',
     400, "max_tokens"),
    ("/v1/completions", b'{"prompt": "x", "max_tokens": 99999999999}', 400, "max_tokens"),
    ("/v1/completions", b'{"prompt": "x"', 400, "invalid JSON"),
    ("/v1/responses", b'{"input": {"nested": true}}', 400, "input"),
    ("/v1/messages", b'{"messages": [{"role": "user", "content": "x"}]}', 400, "max_tokens"),
    ("/inference/v1/generate", b'{"prompt": "x", "request_id": "a\\u0001b"}', 400, "request_id"),
    ("/generate", b'{"text": "x", "rid": "line\\nbreak"}', 400, "rid"),
    ("/generate", b'{"text": "x", "rid": "tab\\u0009"}', 400, "rid"),
    ("/generate", b"\xff\xfe not even utf-8", 400, "invalid JSON"),
    # orjson said 'surrogates not allowed: line 1 column 1 (char 0)' for any such byte.
    ("/v1/messages", b'{"max_tokens": 5, "messages": [{"role": "user", "content": "caf\xe9"}]}',
     400, "invalid JSON body: not valid UTF-8 (byte 0xe9 at offset 63)"),
    ("/v1/messages/count_tokens",
     b'{"messages": [{"role": "user", "content": "x \xed\xa0\x80"}]}',
     400, "invalid JSON body: not valid UTF-8 (byte 0xed at offset 45)"),
]


def test_hostile_bodies(stack: Stack) -> None:
    before = stack.inflight()["registered"]
    with httpx.Client(timeout=30) as client:
        for path, body, status, needle in CASES:
            response = client.post(stack.url + path, content=body,
                                   headers={"content-type": "application/json"})
            assert response.status_code == status, (path, body, response.text)
            error = response.json()["error"]
            assert needle in error["message"], (path, error)
            if path == "/v1/messages":
                assert response.json()["type"] == "error"  # Anthropic's shape
        ok = client.post(stack.url + "/v1/completions", json={"prompt": "still serving"})
        assert ok.status_code == 200 and "still serving" in ok.json()["choices"][0]["text"]
    assert stack.inflight()["registered"] == before + 1


def test_a_work_envelope_not_in_utf8_is_told_which_byte_and_where(stack: Stack) -> None:
    # orjson says "str is not valid UTF-8: surrogates not allowed" at line 1 column 1
    # for any byte that is not UTF-8: the worker repeated it, where the frontend names
    # the byte and its offset.
    worker = stack.workers[0]
    body = b'{"request_id": "utf8-env", "model": "caf\xe9", "prompt": "x"}'
    with socket.create_connection(("127.0.0.1", worker.port), timeout=30) as sock:
        sock.sendall(b"POST /v1/work HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n"
                     b"content-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                     % (len(body), body))
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, payload = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 "), answer[:300]
    reason = "invalid JSON body: not valid UTF-8 (byte 0xe9 at offset 40)"
    assert json.loads(payload)["error"]["message"] == reason
    worker.wait_for_lines(lambda line: line.get("event") == "worker.refused"
                          and line.get("error") == reason, 1)


@pytest.mark.parametrize(("blank", "count"), [(" ", 1_000_000), ("\n", 500_000)])
def test_a_prompt_of_whitespace_is_answered_at_once(stack: Stack, blank: str, count: int) -> None:
    # The engine's tokenizer backtracked through the rest of a whitespace run at each of
    # its positions: 40 000 spaces took 12 s, a prompt near the 1 MiB limit hours of the
    # worker's event loop, and the frontend then retried it on the next worker. The
    # timeout is a guard against that hang, not a measurement (it takes milliseconds).
    prompt = blank * count  # near the 1 MiB body limit ("\n" is 2 bytes in JSON)
    with httpx.Client(timeout=20) as client:
        response = client.post(stack.url + "/v1/completions",
                               json={"prompt": prompt, "max_tokens": 4})
        assert response.status_code == 200, response.text
        assert response.json()["choices"][0]["text"] == "echo: " + prompt
        for worker in stack.workers:
            assert client.get(worker.url + "/health").status_code == 200


def _peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_a_cumulative_stream_that_arrives_at_once_is_written_as_it_goes(
    tmp_path: Path,
) -> None:
    # /generate repeats the text so far in every event, as SGLang does. A worker that
    # answers at once sent the whole reply in one read, and the frontend rendered every
    # event before writing any: 4000 words of 120 letters (480 KB) are 970 MB of
    # events, all in the frontend's memory at once (a 1 MB prompt took 6 GB of RSS).
    words = " ".join(["w" * 120] * 4000)
    with start_stack(tmp_path, workers=[[]]) as stack, httpx.Client(timeout=120) as client:
        with client.stream("POST", stack.url + "/generate", json={
            "text": words, "stream": True, "sampling_params": {"max_new_tokens": 8192},
        }) as response:
            assert response.status_code == 200
            size, tail = 0, b""
            for chunk in response.iter_raw():
                size, tail = size + len(chunk), (tail + chunk)[-64:]
        assert size > 900_000_000 and tail.endswith(b"data: [DONE]\n\n")
        peak = _peak_rss_kib(stack.frontend.process.pid)
    assert peak < 400_000, f"frontend peak RSS {peak} KiB"


def test_a_client_that_stops_reading_its_stream_is_let_go_after_the_total_timeout(
    tmp_path: Path,
) -> None:
    # Worker reads are bounded by the total timeout, writes to the client were not: a
    # caller that stopped reading (a slow-read attack) held its registry entry and its
    # worker connection for as long as it kept the socket open.
    words = " ".join(["w" * 100] * 8000)  # /generate: ~4 GB of cumulative events
    body = json.dumps({"text": words, "stream": True, "rid": "never-reads",
                       "sampling_params": {"max_new_tokens": 8192}}).encode()
    with start_stack(tmp_path, workers=[[]], frontend=["--total-timeout", "2"]) as stack, \
            socket.create_connection(("127.0.0.1", stack.frontend.port)) as sock:
        sock.sendall(b"POST /generate HTTP/1.1\r\nhost: 127.0.0.1\r\n"
                     b"content-type: application/json\r\ncontent-length: %d\r\n\r\n"
                     % len(body) + body)
        stack.wait_inflight(lambda snap: snap["registered"] >= 1)
        # Then nothing is read. Freed at 2 s + the 2 s grace, not when the socket closes.
        stack.wait_inflight(lambda snap: snap["inflight"] == 0, timeout=30)
        deadline = time.monotonic() + 30
        while not (ends := [x for x in stack.frontend.lines() if x.get("event") ==
                            "request.end" and x.get("x_request_id") == "never-reads"]):
            assert time.monotonic() < deadline, "no request.end"
            time.sleep(0.02)  # the line follows the release by a moment
        assert len(ends) == 1 and ends[0]["outcome"] == "error"
        assert ends[0]["error"] == "client did not read the stream within the total timeout (2s)"
        # And the connection is let go too: closed gracefully, it waited for the client
        # to read megabytes of events first, an open socket for as long as the client's.
        while _server_side_open(stack.frontend.port, sock.getsockname()[1]):
            assert time.monotonic() < deadline, "the connection is still open"
            time.sleep(0.02)
        logs = [str(stack.frontend.log), str(stack.workers[0].log)]
    # The worker's whole reply reached the frontend, which cut its caller short: no caller
    # lost it ("produced fp_out … that no caller received" was an error finding, exit 1).
    report = CliRunner().invoke(main, ["analyze", *logs, "--format", "json", "-q"])
    assert report.exit_code == 0, report.output[-2000:]


def _server_side_open(server_port: int, client_port: int) -> bool:
    """Whether the server still holds its end of the connection from `client_port`
    (Linux's /proc/net/tcp: a socket there in any state but CLOSE)."""
    for row in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, remote, state = row.split()[1:4]
        if (int(local.rsplit(":", 1)[1], 16), int(remote.rsplit(":", 1)[1], 16)) == (
                server_port, client_port):
            return state != "07"
    return False


def _chunks(total: int) -> Iterator[bytes]:
    block = b"x" * 65536
    for _ in range(total // len(block)):
        yield block


@pytest.mark.parametrize("chunked", [False, True])
def test_ten_megabyte_bodies_get_413(stack: Stack, chunked: bool) -> None:
    size = 10 * 1024 * 1024
    content: bytes | Iterator[bytes] = _chunks(size) if chunked else b"{" + b" " * size + b"}"
    with httpx.Client(timeout=30) as client:
        response = client.post(stack.url + "/v1/chat/completions", content=content)
        assert response.status_code == 413
        assert "exceeds" in response.json()["error"]["message"]
        assert client.get(stack.url + "/health").json()["status"] == "ok"


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


def test_client_chosen_strings_reach_no_log_line_unchecked(stack: Stack) -> None:
    """A model name, an ``n`` and a path are the client's: no log line (frontend or
    worker) carries one uncapped or with its control characters."""
    tag = "hostile-strings"
    chat = {"messages": [{"role": "user", "content": "x"}]}
    with httpx.Client(base_url=stack.url, timeout=30, headers={"x-request-id": tag}) as client:
        for path, body, param in [
            ("/v1/chat/completions", {**chat, "model": "m" * 100_000}, "model"),
            ("/v1/chat/completions", {**chat, "model": "a\nb\x1b[31m"}, "model"),
            ("/v1/messages", {**chat, "max_tokens": 5, "model": "\u202eevil"}, None),
            ("/inference/v1/generate", {"prompt": "x", "model": "z" * 300}, "model"),
            ("/v1/chat/completions", {**chat, "n": "N" * 200_000}, "n"),
        ]:
            response = client.post(path, json=body)
            assert response.status_code == 400, (path, response.text[:200])
            error = response.json()["error"]
            if param is not None:
                assert error["param"] == param and len(error["message"]) < 200
        assert client.post("/v1/%0A%01%1B[31m" + "p" * 20_000, json=chat).status_code == 404
        ok = client.post("/v1/chat/completions", json={**chat, "model": "my-model \u00e9"})
        assert ok.status_code == 200 and ok.json()["model"] == "my-model \u00e9"
    lines = [line for proc in (stack.frontend, *stack.workers) for line in proc.lines()
             if line.get("x_request_id") == tag]
    assert len(lines) >= 12
    for line in lines:
        for text in _strings(line):
            assert len(text) <= 2048 and text.isprintable(), (line.get("event"), text[:80])


@pytest.mark.parametrize("headers", [
    {"content-type": "text/plain"},  # what a web page may POST cross-site without a preflight
    {"content-type": "application/x-www-form-urlencoded"},
    {"content-type": "multipart/form-data; boundary=b"},
    {"content-type": "application/json", "content-encoding": "gzip"},
])
def test_bodies_that_are_not_plain_json_get_415_in_the_routes_shape(
    stack: Stack, headers: dict[str, str]
) -> None:
    before = stack.inflight()["registered"]
    body = b'{"messages": [{"role": "user", "content": "x"}], "max_tokens": 5, "prompt": "x"}'
    with httpx.Client(base_url=stack.url, timeout=30) as client:
        for path in ("/v1/chat/completions", "/v1/messages", "/generate"):
            response = client.post(path, content=body * 2000, headers=headers)
            assert response.status_code == 415, (path, response.text)
            assert "content-" in response.json()["error"]["message"]
            if path == "/v1/messages":
                assert response.json()["type"] == "error"
        # The same connection, JSON as it is meant to be sent (and with no content-type).
        for extra in ({"content-type": "application/json; charset=utf-8"}, {}):
            ok = client.post("/v1/completions", content=b'{"prompt": "json"}', headers=extra)
            assert ok.status_code == 200 and "json" in ok.json()["choices"][0]["text"]
    assert stack.inflight()["registered"] == before + 2


def test_a_415_for_a_compressed_body_says_which_codings_are_taken(stack: Stack) -> None:
    # RFC 9110 section 12.5.3: a 415 for a content coding ought to carry Accept-Encoding,
    # so that a client (or a proxy compressing request bodies) can tell it from a 415 for
    # the media type and resend uncompressed. Neither 415 said which it was.
    with httpx.Client(base_url=stack.url, timeout=30) as client:
        for path in ("/v1/chat/completions", "/v1/messages/count_tokens"):
            coded = client.post(path, content=gzip.compress(b"{}"), headers={
                "content-type": "application/json", "content-encoding": "gzip"})
            assert coded.status_code == 415, coded.text
            assert coded.headers.get("accept-encoding") == "identity", coded.headers
            typed = client.post(path, content=b"{}", headers={"content-type": "text/plain"})
            assert typed.status_code == 415 and "accept-encoding" not in typed.headers


def test_a_404_names_the_path_asked_for_with_its_control_characters(stack: Stack) -> None:
    # A base URL read from a file or a secret keeps its trailing newline, which the SDK
    # sends percent-encoded: the 404 said "Not Found: POST /v1/chat/completions" (the URL
    # parser behind Starlette's request.url drops tabs and line breaks), a route that
    # exists, and hid the stray character. It now shows the path as the log line does.
    with httpx.Client(base_url=stack.url, timeout=30) as client:
        chat = client.post("/v1%0A/chat/completions", json={"prompt": "x"})
        assert chat.status_code == 404, chat.text
        assert chat.json()["error"]["message"] == "Not Found: POST /v1\\n/chat/completions"
        health = client.get("/health%09")
        assert health.json()["error"]["message"] == "Not Found: GET /health\\t"


def _raw_post(port: int, path: str, transfer_encoding: bytes, chunked_body: bytes) -> bytes:
    request = (
        b"POST " + path.encode() + b" HTTP/1.1\r\nhost: 127.0.0.1\r\n"
        b"content-type: application/json\r\ntransfer-encoding: " + transfer_encoding
        + b"\r\n\r\n" + chunked_body
    )
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):  # the server closes: no request may follow
            answer += chunk
    return answer


def _chunked(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data)


@pytest.mark.parametrize("coding", [b"gzip, chunked", b"GZip ,chunked", b"br;q=1, chunked"])
def test_an_unsupported_transfer_coding_gets_501_and_the_connection_closed(
    stack: Stack, coding: bytes
) -> None:
    """uvicorn's parser undoes chunked only and handed the app a still-gzipped body,
    which failed as "invalid JSON body" (400); RFC 9112 says 501 Not Implemented."""
    body = gzip.compress(b'{"prompt": "zipped"}')
    before = stack.inflight()["registered"]
    # count_tokens reads its body as the inference routes do: it answered 400.
    for path in ("/v1/completions", "/v1/messages", "/v1/messages/count_tokens"):
        answer = _raw_post(stack.frontend.port, path, coding, _chunked(body))
        head, _, payload = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 501 "), answer[:300]
        assert b"\r\nconnection: close" in head.lower()
        error = json.loads(payload)["error"]
        assert "transfer-encoding" in error["message"]
        assert error["type"] == "invalid_request_error"
    # The worker's own endpoint answers the same (it reads its body the same way).
    worker = stack.workers[0]
    head = _raw_post(worker.port, "/v1/work", coding, _chunked(body)).split(b"\r\n")[0]
    assert head.startswith(b"HTTP/1.1 501 ")
    # Plain chunked (and the coding that means none) is served as before.
    for plain in (b"chunked", b"identity, chunked"):
        ok = _raw_post(stack.frontend.port, "/v1/completions", plain + b"\r\nconnection: close",
                       _chunked(b'{"prompt": "plain"}'))
        assert ok.startswith(b"HTTP/1.1 200 ") and b"plain" in ok, ok[:300]
    assert stack.inflight()["registered"] == before + 2
    ends = [line for line in stack.frontend.lines()
            if line.get("event") == "request.end" and line.get("status") == 501]
    assert len(ends) >= 3 and all("transfer-encoding" in line["error"] for line in ends)


def test_whitespace_around_the_client_id_is_not_part_of_it(stack: Stack) -> None:
    """Raw bytes, as httpx would not send them: uvicorn's httptools parser keeps the
    trailing whitespace of a value, which is not part of it (RFC 9110)."""
    body = b'{"prompt": "padded id"}'
    request = (
        b"POST /v1/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n"
        b"content-type: application/json\r\nx-request-id: \t padded-id \t \r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )
    with socket.create_connection(("127.0.0.1", stack.frontend.port), timeout=30) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head = answer.split(b"\r\n\r\n", 1)[0].lower()
    assert head.startswith(b"http/1.1 200") and b"\r\nx-request-id: padded-id\r\n" in head
    # request.end is written once the answer has gone out: wait for it, not race it.
    deadline = time.monotonic() + 10
    while True:
        ends = [line for line in stack.frontend.lines() if line.get("event") == "request.end"
                and str(line.get("x_request_id", "")).strip() == "padded-id"]
        if ends or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert [line["x_request_id"] for line in ends] == ["padded-id"]


def test_a_too_large_messages_body_gets_anthropics_413_type(stack: Stack) -> None:
    # Anthropic's API calls a 413 'request_too_large'; a caller's code and logs read it.
    size = 10 * 1024 * 1024
    with httpx.Client(timeout=30) as client:
        response = client.post(stack.url + "/v1/messages", content=b"{" + b" " * size + b"}")
        assert response.status_code == 413
        error = response.json()
        assert error["type"] == "error"
        assert error["error"]["type"] == "request_too_large"
        assert "exceeds" in error["error"]["message"]


@pytest.mark.parametrize(
    "path", ["/v1/chat/completions", "/v1/messages", "/v1/messages/count_tokens"]
)
def test_an_oversized_body_that_waits_for_100_continue_is_refused_first(
    stack: Stack, path: str
) -> None:
    # curl asks `Expect: 100-continue` before large uploads. The frontend answered
    # `100 Continue` and then refused the body with 413 after taking up to 32 MiB of
    # it; the 413 now comes instead of the 100, and the connection closes (the body
    # it announced never comes).
    head = (b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Expect: 100-continue\r\nx-request-id: big-1\r\nContent-Length: %d\r\n\r\n"
            % (path.encode(), 5 * 1024 * 1024))
    with socket.create_connection(("127.0.0.1", stack.frontend.port), timeout=10) as sock:
        sock.sendall(head)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    assert data.startswith(b"HTTP/1.1 413 "), data[:80]
    headers, _, body = data.partition(b"\r\n\r\n")
    assert b"connection: close" in headers.lower() and b"x-request-id: big-1" in headers
    anthropic = path.startswith("/v1/messages")
    assert b"exceeds" in body and (not anthropic or b"request_too_large" in body)
    # A body that fits still gets its 100 Continue and its answer.
    small = b'{"model": "echo", "messages": [{"role": "user", "content": "fits"}]}'
    with socket.create_connection(("127.0.0.1", stack.frontend.port), timeout=10) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/json\r\nExpect: 100-continue\r\n"
                     b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(small))
        assert sock.recv(100).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        sock.sendall(small)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    assert data.startswith(b"HTTP/1.1 200 ") and b"echo: user: fits" in data


def _raw_exchange(port: int, head: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head)
        answer = b""
        while chunk := sock.recv(65536):  # the server closes after a refusal
            answer += chunk
            if head.startswith(b"GET /health HTTP/1.0") and answer.endswith(b"}"):
                break
        return answer


@pytest.mark.parametrize(
    ("head", "status", "hosts"),
    [
        (b"GET /health HTTP/1.1\r\n\r\n", 400, 0),
        (b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nhost: evil.example\r\n\r\n", 400, 2),
        (b"GET /health HTTP/1.0\r\nhost: localhost\r\nHost: localhost\r\n\r\n", 400, 2),
        (b"GET /health HTTP/1.0\r\n\r\n", 200, None),
    ],
    ids=["none-1.1", "two", "two-1.0", "none-1.0"],
)
def test_a_request_needs_exactly_one_host_header(
    stack: Stack, head: bytes, status: int, hosts: int | None
) -> None:
    # RFC 9112 section 3.2 asks for 400 (h11 answers so); httptools served both, and
    # the Host check on loopback read only the first of two Host lines.
    for port in (stack.frontend.port, stack.workers[0].port):
        answer = _raw_exchange(port, head)
        assert answer.startswith(b"HTTP/1.1 %d " % status), answer[:200]
        if hosts is not None:
            assert answer.endswith(b"a request needs exactly one Host header, not %d "
                                   b"(RFC 9112, section 3.2)" % hosts)
            assert b"connection: close" in answer
    assert httpx.get(stack.url + "/health", timeout=10).status_code == 200


def test_an_http10_request_with_transfer_encoding_is_refused(stack: Stack) -> None:
    # RFC 9112 section 6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing.
    # It was served, its body read as chunked, which a 1.0 proxy in front frames
    # otherwise: a way to smuggle a request past it. The same body over 1.1 is served.
    body = b'{"model": "echo", "prompt": "smuggled?"}'
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    for port, path in ((stack.frontend.port, b"/v1/completions"),
                       (stack.workers[0].port, b"/v1/work")):
        for version in (b"1.0", b"1.1"):
            head = (b"POST %s HTTP/%s\r\nhost: 127.0.0.1\r\ncontent-type: application/json"
                    b"\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
                    % (path, version))
            answer = _raw_exchange(port, head + chunked)
            refused = answer.endswith(b"an HTTP/1.0 request cannot have Transfer-Encoding: "
                                      b"its framing is faulty (RFC 9112, section 6.1)")
            if version == b"1.0":
                assert answer.startswith(b"HTTP/1.1 400 ") and refused, answer[:300]
                assert b"connection: close" in answer
            else:
                # Read and answered by the app (the worker's 400 is its body's, not framing's).
                assert not refused and answer.startswith(b"HTTP/1.1 "), answer[:300]
                assert (port != stack.frontend.port) or answer.startswith(b"HTTP/1.1 200 ")
    assert httpx.get(stack.url + "/health", timeout=10).status_code == 200


@pytest.mark.parametrize(
    ("head", "reason"),
    [
        (b"POST /v1/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nx-request-id: a\x01b\r\n"
         b"content-length: 2\r\n\r\n{}", "Invalid header value char"),
        (b"POST /v1/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 2\r\n"
         b"content-length: 3\r\n\r\n{}", "Duplicate Content-Length"),
        (b"POST /v1/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 2\r\n"
         b"transfer-encoding: chunked\r\n\r\n{}",
         "Transfer-Encoding can't be present with Content-Length"),
    ],
    ids=["control-character", "two-lengths", "smuggling"],
)
def test_a_request_the_parser_refuses_is_told_why_and_logged(
    stack: Stack, head: bytes, reason: str
) -> None:
    # uvicorn answered and logged only "Invalid HTTP request received." for all of these.
    expected = f"Invalid HTTP request received: {reason}"
    answer = _raw_exchange(stack.frontend.port, head)
    assert answer.startswith(b"HTTP/1.1 400 ") and answer.endswith(expected.encode())
    deadline = time.monotonic() + 30
    while not [x for x in stack.frontend.lines() if x.get("message") == expected
               and x.get("level") == "WARN"]:
        assert time.monotonic() < deadline, f"no WARN {expected!r}"
        time.sleep(0.02)


def test_a_schema_the_engine_refuses_is_logged_capped_and_escaped(stack: Stack) -> None:
    """The refusal of a response schema quotes the schema's own strings (a ``$ref``, a
    ``type``): on the frontend's request.end and on a worker's worker.refused for an
    envelope sent to it directly, they are capped and their controls escaped, as every
    other client string on a line is. A C1 CSI and a bidi override went raw onto the
    line (orjson writes them so), and a 1 MB type name whole."""
    tag = "hostile-schema"
    evil = "\x9b2J\u202eevil\u2028" + "L" * 600_000
    chat = {"model": "echo", "messages": [{"role": "user", "content": "x"}]}
    schemas = [{"$ref": "#/" + evil}, {"type": evil},
               {"type": "object", "properties": {"a": {"type": evil}}, "required": ["a"]}]
    with httpx.Client(base_url=stack.url, timeout=30, headers={"x-request-id": tag}) as client:
        for schema in schemas:
            response = client.post("/v1/chat/completions", json={**chat, "response_format": {
                "type": "json_schema", "json_schema": {"name": "s", "schema": schema}}})
            assert response.status_code == 400, response.text[:200]
        envelope = {"request_id": "hostile-envelope", "x_request_id": tag,
                    "endpoint": "chat_completions", "model": "echo", "prompt": "x",
                    "max_tokens": 3}
        for schema in schemas:
            refused = client.post(stack.workers[0].url + "/v1/work",
                                  json={**envelope, "json_schema": schema})
            assert refused.status_code == 400, refused.text[:200]
    # Each line is written at the server loop's next turn, which may come after the
    # answer reached us: wait for the lines, not race them.
    frontend = stack.frontend.wait_for_lines(
        lambda line: line.get("x_request_id") == tag and line.get("event") == "request.end", 3)
    worker = stack.workers[0].wait_for_lines(
        lambda line: line.get("event") == "worker.refused"
        and "json_schema" in str(line["error"]), 3)
    assert len(frontend) == 3
    for line in frontend + worker:
        error = str(line["error"])
        assert len(error) <= 2048 and error.isprintable(), error[:120]
