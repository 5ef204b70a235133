"""A body the server itself refuses mid-read (bad chunk framing) is logged as answered.

The parser's 400 goes out from the protocol while the app is still reading the body:
the app only ever sees ``http.disconnect``. request.end said status 0, outcome
``cancelled`` (the client left) for a client that stayed and was told 400, and the WARN
saying why carried none of the request's ids.
"""

from __future__ import annotations

import contextlib
import socket

import pytest

from tests.frontend_plugin.conftest import Proc, Stack

_BODY = b'{"prompt": "hi", "max_tokens": 3}'


def _head(path: bytes, client_id: bytes) -> bytes:
    return (b"POST %s HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            b"x-request-id: %s\r\ntransfer-encoding: chunked\r\n\r\n" % (path, client_id))


def _send_and_answer(sock: socket.socket, data: bytes) -> bytes:
    with contextlib.suppress(OSError):  # the server may close before taking it all
        sock.sendall(data)
    answer = b""
    with contextlib.suppress(OSError):
        while chunk := sock.recv(65536):  # the server closes after its refusal
            answer += chunk
    return answer


CASES = [
    (b"zz\r\n" + _BODY + b"\r\n0\r\n\r\n",
     "Invalid HTTP request received: Invalid character in chunk size"),
    (b"%x\r\n%sXX0\r\n\r\n" % (len(_BODY), _BODY),
     "Invalid HTTP request received: Expected LF after chunk data"),
    # The header guard's own refusal of chunk framing without end.
    (b"1;" + b"x" * 140_000, "Invalid HTTP request received: chunk sizes and extensions took"),
]


def _check_request_end(proc: Proc, client_id: str, reason: str) -> dict[str, object]:
    end = proc.wait_for_lines(lambda line: line.get("event") == "request.end"
                              and line.get("x_request_id") == client_id, 1)[0]
    assert end["status"] == 400 and end["outcome"] == "ok", end
    assert reason.split(": ", 1)[1] in str(end["error"]), end  # what the client was told
    assert isinstance(end["bytes_out"], int) and end["bytes_out"] > 0
    return end


@pytest.mark.parametrize(("chunks", "reason"), CASES,
                         ids=["chunk-size", "chunk-end", "chunk-extensions"])
def test_a_body_the_server_refuses_mid_read_is_logged_as_its_400_with_the_ids(
    stack: Stack, chunks: bytes, reason: str
) -> None:
    proc = stack.frontend
    client_id = f"refused-{len(chunks)}-{chunks[:2].hex()}"
    with socket.create_connection(("127.0.0.1", proc.port), timeout=30) as sock:
        sock.sendall(_head(b"/v1/completions", client_id.encode()))
        # The app is reading the body when the bad framing comes.
        proc.wait_for_lines(lambda line: line.get("event") == "request.start"
                            and line.get("x_request_id") == client_id, 1)
        answer = _send_and_answer(sock, chunks)
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    assert reason.split(": ", 1)[1].encode() in answer

    end = _check_request_end(proc, client_id, reason)
    warn = proc.wait_for_lines(lambda line: line.get("level") == "WARN"
                               and str(line.get("message", "")).startswith(reason)
                               and line.get("x_request_id") == client_id, 1)[0]
    assert warn["request_id"] == end["request_id"] and warn["span_id"] == end["span_id"]
    stack.wait_inflight(lambda snap: snap["inflight"] == 0)


# A whole request in one write, its chunk extensions past the cap: framing that came in
# the read that ended the headers was not counted, and it was served.
_EXTENDED = b"%x;%s\r\n%s\r\n0\r\n\r\n" % (len(_BODY), b"e" * 140_000, _BODY)


@pytest.mark.parametrize(("chunks", "reason"), [CASES[0], (_EXTENDED, CASES[2][1])],
                         ids=["chunk-size", "chunk-extensions"])
def test_a_body_refused_in_the_read_that_ends_its_headers_is_logged_as_its_400(
    stack: Stack, chunks: bytes, reason: str
) -> None:
    # The refusal comes before the app has even started: it is still the request's.
    client_id = f"refused-at-once-{len(chunks)}"
    with socket.create_connection(("127.0.0.1", stack.frontend.port), timeout=30) as sock:
        answer = _send_and_answer(sock, _head(b"/v1/chat/completions", client_id.encode()) + chunks)
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    _check_request_end(stack.frontend, client_id, reason)


# A transfer coding list that does not end in chunked: llhttp refuses the framing right
# after the headers (RFC 9112 section 6.3), in the read that brought them, before the
# route runs. The route then answered from the headers alone (501 for the coding, 415
# for the media type) into a closed connection, and request.end logged that answer.
HEADER_REFUSALS = [
    (b"/v1/completions", b"application/json", b"compress-h6"),
    (b"/v1/messages", b"text/plain", b"gzip"),
]


@pytest.mark.parametrize(("path", "media", "coding"), HEADER_REFUSALS, ids=["501", "415"])
def test_a_request_the_parser_refuses_after_its_headers_is_logged_as_its_400(
    stack: Stack, path: bytes, media: bytes, coding: bytes
) -> None:
    client_id = f"parser-refused-{coding.decode()}"
    reason = "Invalid HTTP request received: Request has invalid `Transfer-Encoding`"
    head = (b"POST %s HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: %s\r\nx-request-id: %s\r\n"
            b"transfer-encoding: %s\r\n\r\n" % (path, media, client_id.encode(), coding))
    with socket.create_connection(("127.0.0.1", stack.frontend.port), timeout=30) as sock:
        answer = _send_and_answer(sock, head + b"5\r\nhello\r\n0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400 ") and answer.endswith(reason.encode()), answer
    end = _check_request_end(stack.frontend, client_id, reason)
    assert end["bytes_out"] == len(reason)


@pytest.mark.parametrize(("headers", "body"), [
    (b"content-type: application/json\r\ntransfer-encoding: x-worker-h6\r\n",
     b"2\r\n{}\r\n0\r\n\r\n"),
    # Refused on its headers by the route (501, 415), its chunk framing broken in the
    # same read: the parser's 400 went out, and the route's status was logged as sent.
    (b"content-type: application/json\r\ntransfer-encoding: gzip, chunked\r\n",
     b"zz\r\nnot chunk framing\r\n0\r\n\r\n"),
    (b"content-type: text/plain\r\ntransfer-encoding: chunked\r\n",
     b"zz\r\nnot chunk framing\r\n0\r\n\r\n"),
], ids=["unknown-coding", "gzip-chunked", "text-plain"])
def test_a_worker_logs_no_refusal_of_its_own_for_a_request_its_parser_refused(
    stack: Stack, headers: bytes, body: bytes,
) -> None:
    worker = stack.workers[0]
    seen = len(worker.lines())
    head = b"POST /v1/work HTTP/1.1\r\nhost: 127.0.0.1\r\n" + headers + b"\r\n"
    with socket.create_connection(("127.0.0.1", worker.port), timeout=30) as sock:
        answer = _send_and_answer(sock, head + body)
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    # A refusal the worker does give, after it: once its line is written, a line for
    # the first request would be too (one connection's task runs before the next's).
    envelope = b'{"request_id": "after-h6", "endpoint": "completions", "prompt": "x"}'
    with socket.create_connection(("127.0.0.1", worker.port), timeout=30) as sock:
        later = _send_and_answer(sock, b"POST /v1/work HTTP/1.1\r\nhost: 127.0.0.1\r\n"
                                 b"content-type: application/json\r\nconnection: close\r\n"
                                 b"content-length: %d\r\n\r\n%s" % (len(envelope), envelope))
    hop_id = later.split(b"x-server-request-id: ", 1)[1].split(b"\r\n", 1)[0].decode()
    worker.wait_for_lines(lambda line: line.get("event") == "worker.refused"
                          and line.get("request_id") == hop_id, 1)
    refused = [line for line in worker.lines()[seen:] if line.get("event") == "worker.refused"]
    assert [line["request_id"] for line in refused] == [hop_id], refused
