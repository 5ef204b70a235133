"""The worker hop's HTTP client against a scripted HTTP/1.1 server on loopback.

Each test scripts what the server answers (chunked, sized, ``Connection: close``, a
close without warning, a stream left unread) and counts the connections it accepts,
so reuse and every reason not to reuse are checked on real sockets.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest

from ridtrace.frontend_plugin.worker_connection import WorkerHttpError
from ridtrace.frontend_plugin.worker_http import ConnectionPool

Answer = Callable[[asyncio.StreamWriter], Awaitable[bool]]  # True: keep the connection


def _chunked(*parts: bytes) -> bytes:
    body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"
    return b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + body


class ScriptedServer:
    """Reads requests (head + sized body) and answers each with ``answer``."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.accepted = 0
        self.requests: list[bytes] = []
        self.closed_by_peer = asyncio.Event()

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def __aexit__(self, *_: object) -> None:
        self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                size = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                self.requests.append(head + await reader.readexactly(size))
                if not await self.answer(writer):
                    break
            # Wait for the client to go: reading EOF means it closed its side.
            while await reader.read(1024):
                pass
            self.closed_by_peer.set()
        except (asyncio.IncompleteReadError, ConnectionError):
            self.closed_by_peer.set()
        finally:
            writer.close()


def _answer(data: bytes, *, keep: bool = True) -> Answer:
    async def answer(writer: asyncio.StreamWriter) -> bool:
        writer.write(data)
        await writer.drain()
        return keep

    return answer


async def _get(pool: ConnectionPool, url: str) -> tuple[int, bytes]:
    async def get() -> tuple[int, bytes]:
        response = await pool.post(url, "/v1/work", b'{"x": 1}',
                                   {"content-type": "application/json"})
        body = await response.read()
        response.release()
        return response.status, body

    return await asyncio.wait_for(get(), 5)  # a reused dead connection would hang


def test_answers_read_to_the_end_reuse_one_connection_and_the_request_is_one_buffer() -> None:
    async def main() -> None:
        server = ScriptedServer(_answer(_chunked(b'{"a":1}\n', b'{"b":2}\n')))
        async with server as url:
            pool = ConnectionPool(limit=4, connect_timeout=2)
            for _ in range(3):
                assert await _get(pool, url) == (200, b'{"a":1}\n{"b":2}\n')
            assert server.accepted == 1 and pool.opened == 1
            assert server.requests[0].startswith(b"POST /v1/work HTTP/1.1\r\nHost: 127.0.0.1:")
            assert server.requests[0].endswith(b'content-length: 8\r\n\r\n{"x": 1}')
            await pool.aclose()

    asyncio.run(main())


@pytest.mark.parametrize("interim", [b"HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n",
                                     b"HTTP/1.1 100 Continue\r\n\r\n" * 2])
def test_an_interim_answer_is_not_the_answer(interim: bytes) -> None:
    # RFC 9110 15.2: a client must parse 1xx answers before the final one. A 103 was
    # taken for the answer (a refusal), the connection went back to the pool with the
    # real one unread, and the next request on it read the earlier request's reply.
    replies = iter([b'{"first":1}\n', b'{"second":2}\n'])

    async def answer(writer: asyncio.StreamWriter) -> bool:
        writer.write(interim)
        await writer.drain()
        await asyncio.sleep(0.05)  # the final answer in a later read
        writer.write(_chunked(next(replies)))
        await writer.drain()
        return True

    async def main() -> None:
        server = ScriptedServer(answer)
        async with server as url:
            pool = ConnectionPool(limit=4, connect_timeout=2)
            assert await _get(pool, url) == (200, b'{"first":1}\n')
            assert await _get(pool, url) == (200, b'{"second":2}\n')
            assert server.accepted == 1
            await pool.aclose()

    asyncio.run(main())


def test_credentials_in_the_worker_url_stay_out_of_the_host_header() -> None:
    async def main() -> None:
        server = ScriptedServer(_answer(_chunked(b'{"a":1}\n')))
        async with server as url:
            pool = ConnectionPool(limit=1, connect_timeout=2)
            port = url.rpartition(":")[2]
            with_credentials = url.replace("http://", "http://user:secretpw@")
            assert await _get(pool, with_credentials) == (200, b'{"a":1}\n')
            head = server.requests[0].split(b"\r\n")
            assert head[1] == b"Host: 127.0.0.1:" + port.encode()
            assert b"secretpw" not in server.requests[0]
            await pool.aclose()

    asyncio.run(main())


@pytest.mark.parametrize("why", ["connection close", "idle too long", "server closed it"])
def test_a_connection_is_not_handed_out_again_when_it_may_be_closing(why: str) -> None:
    async def main() -> None:
        sized = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n"
        if why == "connection close":
            answer = _answer(sized + b"connection: close\r\n\r\nok", keep=False)
        elif why == "server closed it":
            async def answer(writer: asyncio.StreamWriter) -> bool:
                writer.write(sized + b"\r\nok")
                await writer.drain()
                writer.close()  # without saying so in the answer
                return False
        else:
            answer = _answer(sized + b"\r\nok")
        server = ScriptedServer(answer)
        async with server as url:
            pool = ConnectionPool(limit=4, connect_timeout=2,
                                  keep_alive=0.0 if why == "idle too long" else 60)
            assert await _get(pool, url) == (200, b"ok")
            if why == "server closed it":  # until the client has seen the close
                deadline = time.monotonic() + 5
                while not all(c.lost for q in pool._idle.values() for c in q):
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.01)
            assert await _get(pool, url) == (200, b"ok")
            assert server.accepted == 2 and pool.opened == 2
            await pool.aclose()

    asyncio.run(main())


def test_an_idle_connection_is_closed_when_it_expires_without_more_traffic() -> None:
    # Expired connections were closed only when the next answer from that worker came
    # back: after a burst, one socket per request of it stayed open on both sides until
    # the worker closed them (15 s), or for ever when it never did or got no more work.
    async def main() -> None:
        server = ScriptedServer(_answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"))
        async with server as url:
            pool = ConnectionPool(limit=4, connect_timeout=2, keep_alive=0.2)
            assert await _get(pool, url) == (200, b"ok")
            assert pool.idle_connections() == 1
            await asyncio.wait_for(server.closed_by_peer.wait(), 10)
            assert pool.idle_connections() == 0
            await pool.aclose()

    asyncio.run(main())


def test_an_answer_left_unread_drops_its_connection() -> None:
    async def main() -> None:
        async def endless(writer: asyncio.StreamWriter) -> bool:
            writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nfirst\r\n")
            await writer.drain()
            return False  # the server waits for the client to go

        server = ScriptedServer(endless)
        async with server as url:
            pool = ConnectionPool(limit=4, connect_timeout=2)
            response = await pool.post(url, "/v1/work", b"{}", {})
            assert await response.readany() == b"first"
            response.release()  # not at its end: dropped, as close() would
            await asyncio.wait_for(server.closed_by_peer.wait(), 5)
            assert pool.idle_connections() == 0
            await pool.aclose()

    asyncio.run(main())


def test_a_connection_lost_mid_answer_is_an_error_of_this_answer() -> None:
    async def main() -> None:
        partial = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nfirst\r\n"
        async def cut(writer: asyncio.StreamWriter) -> bool:
            writer.write(partial)
            await writer.drain()
            writer.transport.abort()
            return False

        server = ScriptedServer(cut)
        async with server as url:
            pool = ConnectionPool(limit=4, connect_timeout=2)
            response = await pool.post(url, "/v1/work", b"{}", {})
            with pytest.raises(WorkerHttpError):
                await response.read()
            response.close()
            await pool.aclose()

    asyncio.run(main())


def test_refused_connections_and_header_injection_are_errors() -> None:
    async def main() -> None:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        pool = ConnectionPool(limit=1, connect_timeout=2)
        with pytest.raises(WorkerHttpError):
            await pool.post(f"http://127.0.0.1:{port}", "/v1/work", b"{}", {})
        with pytest.raises(ValueError, match="line break"):
            await pool.post(f"http://127.0.0.1:{port}", "/v1/work", b"{}",
                            {"baggage": "a=1\r\nx-evil: 1"})
        # Neither failure kept a slot: the one-connection pool still serves.
        good = ScriptedServer(_answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"))
        async with good as url:
            assert await asyncio.wait_for(_get(pool, url), 5) == (200, b"ok")
        await pool.aclose()

    asyncio.run(main())
