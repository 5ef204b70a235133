"""Request lines whose target uvicorn's httptools protocol mishandled (RFC 9112 section
3.2), probed on a real `ridtrace serve` frontend and worker with raw sockets, since no
well-behaved client sends these.
"""

from __future__ import annotations

import json
import socket
import time

import pytest

from tests.frontend_plugin.conftest import Proc, Stack


def _exchange(port: int, line: bytes) -> bytes:
    """Send one request with ``line`` as its request line; read until the server closes."""
    sent = line + b"\r\nhost: 127.0.0.1:%d\r\nconnection: close\r\n\r\n" % port
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(sent)
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except ConnectionResetError:  # closed with our bytes unread
            pass
    return answer


def _ports(stack: Stack) -> list[Proc]:
    return [stack.frontend, stack.workers[0]]


def _wait_for_warning(proc: Proc, reason: str) -> None:
    deadline = time.monotonic() + 10
    while not [x for x in proc.lines()
               if x["level"] == "WARN" and reason in str(x["message"])]:
        assert time.monotonic() < deadline, f"no WARN line saying {reason!r}"
        time.sleep(0.05)


@pytest.mark.parametrize("query", [b"", b"?probe=1"])
def test_an_absolute_target_with_an_empty_path_is_the_root(stack: Stack, query: bytes) -> None:
    # RFC 9112 sections 3.2.2 and 4.2.1: "http://host:port" asks for "/" (uvicorn found
    # no path in it: a 400 "Invalid HTTP request received."). The root is a 404 in each
    # route's shape; with a path, as a proxy sends it, the target is served.
    for proc in _ports(stack):
        answer = _exchange(proc.port, b"GET http://127.0.0.1:%d%s HTTP/1.1" % (proc.port, query))
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 404 "), answer[:300]
        assert b"application/json" in head and json.loads(body), answer[:300]
        health = _exchange(proc.port, b"GET http://127.0.0.1:%d/health HTTP/1.1" % proc.port)
        assert health.startswith(b"HTTP/1.1 200 "), health[:300]


@pytest.mark.parametrize(("line", "reason"), [
    # Only OPTIONS may use the asterisk-form (RFC 9112 section 3.2.4): these reached
    # the routes as the path "/*", a 404.
    (b"GET * HTTP/1.1", "the asterisk-form target (*) is only for OPTIONS"),
    (b"POST * HTTP/1.1", "the asterisk-form target (*) is only for OPTIONS"),
    # A proxy's method: uvicorn found no path in its authority-form target, a 400 with
    # no reason.
    (b"CONNECT 127.0.0.1:443 HTTP/1.1", "CONNECT asks a proxy for a tunnel"),
    # Served as their path before: a server for http(s) is not one for ftp or file.
    (b"GET ftp://127.0.0.1:PORT/health HTTP/1.1",
     "an absolute request target must be an http or https URI"),
    (b"GET FILE://127.0.0.1:PORT/health HTTP/1.1",
     "an absolute request target must be an http or https URI"),
    # Credentials in the target, served where the same in Host got 400 (RFC 9110
    # section 4.2.4: a recipient treats userinfo as an error).
    (b"GET http://user:pw@127.0.0.1:PORT/health HTTP/1.1",
     "an http URI cannot carry user information"),
    (b"POST http://u@localhost/v1/chat/completions HTTP/1.1",
     "an http URI cannot carry user information"),
    # Read by llhttp, refused by the URL parser uvicorn then runs: a 400 with no reason.
    (b"GET http:///health HTTP/1.1", "the request target is not a valid URI"),
    (b"GET http://127.0.0.1:99999999/health HTTP/1.1", "the request target is not a valid URI"),
])
def test_targets_not_for_this_server_get_400_saying_why(
    stack: Stack, line: bytes, reason: str,
) -> None:
    for proc in _ports(stack):
        answer = _exchange(proc.port, line.replace(b"PORT", b"%d" % proc.port))
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400 "), answer[:300]
        assert b"connection: close" in head.lower()
        assert reason in body.decode(), answer[:300]
        _wait_for_warning(proc, reason)


def test_https_targets_and_options_asterisk_are_still_served(stack: Stack) -> None:
    for proc in _ports(stack):
        for line in (b"GET https://127.0.0.1:%d/health HTTP/1.1" % proc.port,
                     b"GET HTTP://127.0.0.1:%d/health HTTP/1.1" % proc.port):
            answer = _exchange(proc.port, line)
            assert answer.startswith(b"HTTP/1.1 200 "), (line, answer[:300])
        options = _exchange(proc.port, b"OPTIONS * HTTP/1.1")
        assert options.startswith(b"HTTP/1.1 404 "), options[:300]
