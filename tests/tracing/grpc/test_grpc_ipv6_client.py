"""``request.start``'s ``client`` for a peer on IPv6 is ``host:port`` as over HTTP.

gRPC names an IPv6 peer ``ipv6:%5B::1%5D:port`` (its brackets percent-encoded); the
interceptor dropped the scheme only, so the line said ``%5B::1%5D:48438`` where an HTTP
request from the same address says ``::1:48438`` (uvicorn's ``client`` tuple): a search
for the address found one transport's lines and not the other's.
"""

from __future__ import annotations

import asyncio
import socket
from concurrent import futures
from typing import Any

import grpc
import grpc.aio
import pytest

from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, service_of
from tests.tracing.grpc.test_grpc_sync_server import _wait_until

CALL_TIMEOUT = 30.0


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


pytestmark = pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback here")


async def _echo_aio(request: bytes, context: Any) -> bytes:
    return request


def _echo_sync(request: bytes, context: Any) -> bytes:
    return request


def _check(log_lines: LogLines) -> None:
    (start,) = log_lines.events("request.start")
    host, _, port = start["client"].rpartition(":")
    assert host == "::1" and port.isdigit(), start["client"]


def test_an_ipv6_peer_is_logged_as_host_and_port_on_grpc_aio(log_lines: LogLines) -> None:
    async def run() -> None:
        server = grpc.aio.server(interceptors=[RequestTracingInterceptor()])
        service_of({"Echo": grpc.unary_unary_rpc_method_handler(_echo_aio)})(server)
        port = server.add_insecure_port("[::1]:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"[::1]:{port}") as channel:
                assert await channel.unary_unary("/t.S/Echo")(b"hi", timeout=CALL_TIMEOUT) == b"hi"
            await log_lines.wait_for(lambda lines: bool(lines.events("request.start")))
        finally:
            await server.stop(None)

    asyncio.run(run())
    _check(log_lines)


def test_an_ipv6_peer_is_logged_as_host_and_port_on_grpc_server(log_lines: LogLines) -> None:
    pool = futures.ThreadPoolExecutor(2)
    server = grpc.server(pool, interceptors=[RequestTracingInterceptor()])
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(
            "t.S", {"Echo": grpc.unary_unary_rpc_method_handler(_echo_sync)}
        ),)
    )
    port = server.add_insecure_port("[::1]:0")
    server.start()
    try:
        with grpc.insecure_channel(f"[::1]:{port}") as channel:
            assert channel.unary_unary("/t.S/Echo")(b"hi", timeout=CALL_TIMEOUT) == b"hi"
        _wait_until(lambda: bool(log_lines.events("request.start")), timeout=CALL_TIMEOUT)
    finally:
        server.stop(None).wait(CALL_TIMEOUT)
        pool.shutdown(wait=False, cancel_futures=True)
    _check(log_lines)
