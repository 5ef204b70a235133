"""Fixtures for the gRPC interceptor tests: the compiled proto, log capture, a real server."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import io
import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import grpc
import grpc.aio
import pytest
from grpc_tools import protoc

from ridtrace.tracing.grpc import RequestTracingInterceptor
from ridtrace.tracing.logs import configure_logging

PROTO_DIR = Path(__file__).parent / "protos"


class Proto(NamedTuple):
    pb2: ModuleType
    pb2_grpc: ModuleType


@pytest.fixture(scope="session")
def proto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proto]:
    """ridtrace_inference.proto compiled by grpcio-tools into a temporary folder."""
    out = tmp_path_factory.mktemp("proto")
    status = protoc.main(
        [
            "grpc_tools.protoc",
            f"-I{PROTO_DIR}",
            f"--python_out={out}",
            f"--grpc_python_out={out}",
            "ridtrace_inference.proto",
        ]
    )
    assert status == 0, "protoc failed"
    sys.path.insert(0, str(out))
    try:
        yield Proto(
            importlib.import_module("ridtrace_inference_pb2"),
            importlib.import_module("ridtrace_inference_pb2_grpc"),
        )
    finally:
        sys.path.remove(str(out))


class LogLines(io.RawIOBase):
    """A binary sink for configure_logging that parses each JSON line as it is written
    and lets a coroutine wait for a line instead of sleeping."""

    def __init__(self) -> None:
        super().__init__()
        self.raw_lines: list[bytes] = []
        self.lines: list[dict[str, Any]] = []
        self._waiters: list[asyncio.Event] = []

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        for raw in chunk.splitlines():
            self.raw_lines.append(raw)
            self.lines.append(json.loads(raw))  # one object per line: the contract
        for event in self._waiters:
            event.set()
        return len(chunk)

    def close(self) -> None:  # the sink outlives loguru's handler in tests
        pass

    def events(self, name: str, **match: Any) -> list[dict[str, Any]]:
        return [
            line
            for line in self.lines
            if line.get("event") == name and all(line.get(k) == v for k, v in match.items())
        ]

    async def wait_for(
        self, predicate: Callable[[LogLines], bool], *, timeout: float = 10.0
    ) -> None:
        """Wait (on the server's own loop) until ``predicate`` holds for the lines."""
        event = asyncio.Event()
        self._waiters.append(event)
        deadline = asyncio.get_running_loop().time() + timeout
        try:
            while not predicate(self):
                event.clear()
                remaining = deadline - asyncio.get_running_loop().time()
                await asyncio.wait_for(event.wait(), max(remaining, 0))
        finally:
            self._waiters.remove(event)


@pytest.fixture
def log_lines() -> LogLines:
    sink = LogLines()
    configure_logging(sink, service="grpc-test", level="DEBUG", intercept_stdlib=False)
    return sink


@contextlib.asynccontextmanager
async def serving(
    add: Callable[[grpc.aio.Server], None],
    *,
    interceptors: Sequence[Any] = (),
    options: Sequence[tuple[str, Any]] = (),
    **server_kwargs: Any,
) -> AsyncIterator[str]:
    """A real grpc.aio server on a free loopback port; yields its ``host:port``."""
    server = grpc.aio.server(
        interceptors=list(interceptors), options=list(options), **server_kwargs
    )
    add(server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(None)


@contextlib.asynccontextmanager
async def traced_channel(
    add: Callable[[grpc.aio.Server], None], provider: Any
) -> AsyncIterator[grpc.aio.Channel]:
    """A channel to a `serving` server whose calls ridtrace traces into `provider`."""
    interceptor = RequestTracingInterceptor(tracer_provider=provider)
    async with (
        serving(add, interceptors=[interceptor]) as target,
        grpc.aio.insecure_channel(target) as channel,
    ):
        # Connected first: a short deadline is then the call's alone. Spent connecting
        # on a loaded machine, it ended calls in gRPC's core before any handler ran.
        await channel.channel_ready()
        yield channel


def service_of(
    handlers: dict[str, grpc.RpcMethodHandler], service: str = "t.S"
) -> Callable[[grpc.aio.Server], None]:
    """What `serving` takes to serve `handlers` (method name → handler) as `service`."""
    def add(server: grpc.aio.Server) -> None:
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, handlers),))

    return add


def metadata_dict(metadata: Any) -> dict[str, list[Any]]:
    """All values per key (to catch duplicates)."""
    out: dict[str, list[Any]] = {}
    for key, value in metadata or ():
        out.setdefault(key, []).append(value)
    return out
