"""A gRPC server process for the shutdown test: ``python -m ... PORT``.

Configured by the OTEL_* environment; stops on SIGTERM through serve_until_signalled.
"""

from __future__ import annotations

import asyncio
import sys

import grpc
import grpc.aio

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


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
