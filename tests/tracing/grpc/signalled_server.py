"""A gRPC server process for the shutdown test: ``python -m ... PORT [sync]``.

Configured by the OTEL_* environment; stops on SIGTERM through serve_until_signalled,
or with ``sync`` a synchronous ``grpc.server`` stopped as docs/grpc.md shows.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc
import grpc.aio

import ridtrace
from ridtrace.tracing import configure_metrics, configure_tracing
from ridtrace.tracing.grpc import RequestTracingInterceptor, serve_until_signalled


async def hello(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    return b"hello"


async def main(port: int) -> None:
    configure_tracing("grpc-default-name")
    configure_metrics("grpc-default-name", prometheus=False)
    server = grpc.aio.server(interceptors=[RequestTracingInterceptor()])
    methods = {"Hello": grpc.unary_unary_rpc_method_handler(hello)}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("demo.Greeter", methods),))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await serve_until_signalled(server, grace=2.0)


def trickle(request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
    """One message, then on until the server's stop cuts the call off, and a cleanup
    after that: the handler still unwinds when the server has stopped."""
    cut_off = threading.Event()
    context.add_callback(cut_off.set)
    yield b"first"
    cut_off.wait(60)
    time.sleep(0.3)  # a cleanup after the cut (a release over the network)


def sync_main(port: int) -> None:
    """docs/grpc.md's recipe for a synchronous server, line for line at its end."""
    configure_tracing("grpc-default-name")
    configure_metrics("grpc-default-name", prometheus=False)
    server = grpc.server(ThreadPoolExecutor(4), interceptors=[RequestTracingInterceptor()])
    methods = {
        "Hello": grpc.unary_unary_rpc_method_handler(lambda request, context: b"hello"),
        "Trickle": grpc.unary_stream_rpc_method_handler(trickle),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("demo.Greeter", methods),))
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    signal.signal(signal.SIGTERM, lambda signum, frame: server.stop(grace=5))
    server.wait_for_termination()
    ridtrace.shutdown_telemetry()   # spans and metrics still batched reach the collector


if __name__ == "__main__":
    if sys.argv[2:] == ["sync"]:
        sync_main(int(sys.argv[1]))
    else:
        asyncio.run(main(int(sys.argv[1])))
