"""An ``x-request-id`` the handler puts in its response metadata, as the HTTP middleware
treats one the app puts on its response: kept when the client sent none, replaced by
the echo of the client's, dropped after a refused one (never echoed then).

Before, it was dropped whatever the client sent: a service minting correlation ids for
clients that send none lost every one of them behind the interceptor.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent import futures
from typing import Any

import grpc
import grpc.aio
import pytest

from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, metadata_dict, serving

CALL_TIMEOUT = 10.0
CASES: list[tuple[tuple[tuple[str, str], ...], list[str] | None]] = [
    ((), ["app-made"]),  # none sent: the handler's stays
    ((("x-request-id", "client-1"),), ["client-1"]),  # the echo replaces it
    ((("x-request-id", "x" * 200),), None),  # refused: nothing echoed, nor the handler's
]


def _method(aio: bool) -> Callable[..., Any]:
    if aio:

        async def answer(request: bytes, context: Any) -> bytes:
            await context.send_initial_metadata((("x-request-id", "app-made"),))
            context.set_trailing_metadata((("x-request-id", "app-made"),))
            return b""

        return answer

    def answer_sync(request: bytes, context: Any) -> bytes:
        context.send_initial_metadata((("x-request-id", "app-made"),))
        context.set_trailing_metadata((("x-request-id", "app-made"),))
        return b""

    return answer_sync


def _generic(aio: bool) -> grpc.GenericRpcHandler:
    return grpc.method_handlers_generic_handler(
        "probe.Ids", {"Answer": grpc.unary_unary_rpc_method_handler(_method(aio))}
    )


def _aio_calls() -> list[tuple[Any, Any]]:
    async def run() -> list[tuple[Any, Any]]:
        got = []
        async with (
            serving(
                lambda s: s.add_generic_rpc_handlers((_generic(True),)),
                interceptors=[RequestTracingInterceptor()],
            ) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            for metadata, _ in CASES:
                call = channel.unary_unary("/probe.Ids/Answer")(
                    b"", metadata=metadata, timeout=CALL_TIMEOUT
                )
                await call
                got.append((await call.initial_metadata(), await call.trailing_metadata()))
        return got

    return asyncio.run(run())


def _sync_calls() -> list[tuple[Any, Any]]:
    pool = futures.ThreadPoolExecutor(2)
    server = grpc.server(pool, interceptors=[RequestTracingInterceptor()])
    server.add_generic_rpc_handlers((_generic(False),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    got = []
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            for metadata, _ in CASES:
                _, call = channel.unary_unary("/probe.Ids/Answer").with_call(
                    b"", metadata=metadata, timeout=CALL_TIMEOUT
                )
                got.append((call.initial_metadata(), call.trailing_metadata()))
    finally:
        stopper = threading.Thread(target=server.stop, args=(None,), daemon=True)
        stopper.start()
        stopper.join(CALL_TIMEOUT)
        pool.shutdown(wait=False, cancel_futures=True)
    return got


@pytest.mark.parametrize("calls", [_aio_calls, _sync_calls], ids=["aio", "sync"])
def test_the_handlers_own_client_id_is_treated_as_over_http(
    calls: Callable[[], list[tuple[Any, Any]]], log_lines: LogLines
) -> None:
    for (initial, trailing), (_, expected) in zip(calls(), CASES, strict=True):
        for metadata in (metadata_dict(initial), metadata_dict(trailing)):
            assert metadata.get("x-request-id") == expected
            assert len(metadata["x-server-request-id"]) == 1
