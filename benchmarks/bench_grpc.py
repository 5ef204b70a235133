"""Per-call overhead of ridtrace's grpc.aio interceptor, against a bare server and
opentelemetry-instrumentation-grpc.

Every contender is its own grpc.aio server on a loopback port in this one process, and
one client drives them interleaved call by call (the order reshuffled each round), so
machine noise lands on all of them alike. Reported: the median latency of a call, the
ratio to the bare server, the added microseconds, and the quartiles of the per-round
added cost (how much of the difference is noise).

    .venv/bin/python benchmarks/bench_grpc.py            # the table in docs/performance.md
    .venv/bin/python benchmarks/bench_grpc.py --rounds 5 --calls 100   # a quick look
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import grpc.aio
from loguru import logger
from opentelemetry.instrumentation.grpc import aio_server_interceptor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from ridtrace.tracing import configure_logging
from ridtrace.tracing.grpc import RequestTracingInterceptor

STREAM_MESSAGES = 10
METADATA = (("x-request-id", "bench-client-id"),)


class _NullExporter(SpanExporter):
    """Spans are built and batched as in production, then dropped: no network in the
    numbers."""

    def export(self, spans: Any) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def _sdk_provider() -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(_NullExporter()))
    return provider


async def _unary(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    return request


async def _stream(request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
    for _ in range(STREAM_MESSAGES):
        yield request


def _contenders(provider: TracerProvider) -> dict[str, Callable[[], list[Any]]]:
    """Name -> interceptor list; built per server so none shares state."""

    def ridtrace(**options: Any) -> Callable[[], list[Any]]:
        return lambda: [RequestTracingInterceptor(**options)]

    return {
        "bare grpc.aio": lambda: [],
        "opentelemetry-instrumentation-grpc": lambda: [
            aio_server_interceptor(tracer_provider=provider)
        ],
        "ridtrace defaults (SDK tracer, JSON logs)": ridtrace(tracer_provider=provider),
        "ridtrace, no SDK, JSON logs": ridtrace(),
        "ridtrace, SDK tracer, no lifecycle logs": ridtrace(
            tracer_provider=provider, log_lifecycle=False
        ),
        "ridtrace, SDK, no logs, initial_metadata=never": ridtrace(
            tracer_provider=provider, log_lifecycle=False, initial_metadata="never"
        ),
        "ridtrace, SDK, no logs, initial_metadata=always": ridtrace(
            tracer_provider=provider, log_lifecycle=False, initial_metadata="always"
        ),
        "otel instrumentation + ridtrace defaults": lambda: [
            aio_server_interceptor(tracer_provider=provider),
            RequestTracingInterceptor(tracer_provider=provider),
        ],
    }


async def _start(interceptors: list[Any]) -> tuple[grpc.aio.Server, str]:
    server = grpc.aio.server(interceptors=interceptors)
    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(_unary),
        "Stream": grpc.unary_stream_rpc_method_handler(_stream),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("bench.B", handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"


def _caller(channel: grpc.aio.Channel, workload: str) -> Callable[[], Awaitable[None]]:
    payload = b"x" * 64
    if workload == "unary":
        method = channel.unary_unary("/bench.B/Unary")

        async def unary() -> None:
            await method(payload, metadata=METADATA)

        return unary
    stream = channel.unary_stream("/bench.B/Stream")

    async def streaming() -> None:
        async for _message in stream(payload, metadata=METADATA):
            pass

    return streaming


async def run(rounds: int, calls: int, workloads: list[str]) -> dict[str, Any]:
    """Per-call latencies, interleaved call by call: within a round every contender
    takes one call in turn (in an order reshuffled each round), so a burst of load
    from elsewhere on the machine lands on all contenders alike."""
    provider = _sdk_provider()
    servers: dict[str, tuple[grpc.aio.Server, grpc.aio.Channel]] = {}
    for name, make in _contenders(provider).items():
        server, target = await _start(make())
        channel = grpc.aio.insecure_channel(target)
        await channel.channel_ready()
        servers[name] = (server, channel)
    order = list(servers)
    # samples[workload][name][round] = that round's per-call latencies (seconds)
    samples: dict[str, dict[str, list[list[float]]]] = {
        w: {name: [] for name in order} for w in workloads
    }
    try:
        for workload in workloads:
            callers = {name: _caller(servers[name][1], workload) for name in order}
            for name in order:  # warm-up: connections, caches, first-call paths
                for _ in range(max(calls // 10, 10)):
                    await callers[name]()
            for _ in range(rounds):
                random.shuffle(order)
                for name in order:
                    samples[workload][name].append([])
                for _ in range(calls):
                    for name in order:
                        started = time.perf_counter()
                        await callers[name]()
                        samples[workload][name][-1].append(time.perf_counter() - started)
    finally:
        for server, channel in servers.values():
            await channel.close()
            await server.stop(None)
        provider.shutdown()
    return {workload: _summarise(per_name) for workload, per_name in samples.items()}


def _summarise(per_name: dict[str, list[list[float]]]) -> list[dict[str, Any]]:
    """Median of all calls, and the spread of the per-round medians (noise indicator)."""
    pooled = {name: [x for r in rounds for x in r] for name, rounds in per_name.items()}
    bare = statistics.median(pooled["bare grpc.aio"])
    bare_rounds = [statistics.median(r) for r in per_name["bare grpc.aio"]]
    rows = []
    for name, rounds in per_name.items():
        median = statistics.median(pooled[name])
        # Added cost per round against bare in the same round: its quartiles say how
        # much of the "added" column is noise.
        added = sorted(statistics.median(r) - b for r, b in zip(rounds, bare_rounds, strict=True))
        q1, _, q3 = statistics.quantiles(added, n=4) if len(added) > 1 else (0, 0, 0)
        rows.append(
            {
                "contender": name,
                "median_us": median * 1e6,
                "ratio": median / bare,
                "added_us": (median - bare) * 1e6,
                "added_iqr_us": (q1 * 1e6, q3 * 1e6),
            }
        )
    return rows


def render(results: dict[str, Any], rounds: int, calls: int) -> str:
    lines = [
        f"rounds={rounds}, calls per contender per round={calls}, "
        f"stream={STREAM_MESSAGES} messages, Python {platform.python_version()}, "
        f"grpcio {grpc.__version__}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}",
        "",
        "| workload | contender | median per call (µs) | × bare | added (µs) "
        "| added, per-round IQR (µs) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for workload, rows in results.items():
        for row in rows:
            q1, q3 = row["added_iqr_us"]
            lines.append(
                f"| {workload} | {row['contender']} | {row['median_us']:.0f} | "
                f"{row['ratio']:.2f} | {row['added_us']:+.0f} | {q1:+.0f} … {q3:+.0f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=300, help="sequential calls per round")
    parser.add_argument("--workload", choices=["unary", "stream"], action="append")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    # The ridtrace contenders write their two lifecycle lines per call, JSON-encoded and
    # flushed, as in production; to /dev/null so the disk is not what is measured.
    logger.remove()
    configure_logging(open(os.devnull, "wb"), service="bench", intercept_stdlib=False)  # noqa: SIM115
    workloads = args.workload or ["unary", "stream"]
    results = asyncio.run(run(args.rounds, args.calls, workloads))
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
    else:
        print(render(results, args.rounds, args.calls))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
