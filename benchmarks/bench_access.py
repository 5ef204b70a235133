"""What the network-hardening pieces cost per request, in process.

Two pairs, interleaved round by round so load from other processes on a shared machine
hits both contenders of a pair alike:

* worker-hop headers: ``worker_hop_headers`` with a recording SDK span (the configured
  propagators inject ``traceparent``, ``tracestate`` and ``baggage``) against the
  no-SDK path (one formatted ``traceparent``) — paid once per dispatch;
* the API-key check: a bare ASGI app against the same app behind
  ``SharedSecretMiddleware`` with three keys and a valid ``Authorization: Bearer`` —
  paid once per request when keys are configured (no keys: the check is not added).

Usage: ``.venv/bin/python benchmarks/bench_access.py [--rounds 200] [--calls 2000]``;
prints a markdown table of medians (µs per call) with the ratio per pair.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from typing import Any

from opentelemetry import baggage, trace
from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

from ridtrace.frontend_plugin.auth import SharedSecretMiddleware
from ridtrace.frontend_plugin.hop import worker_hop_headers
from ridtrace.tracing import RequestContext


def _hop_contenders() -> tuple[Callable[[], object], Callable[[], object]]:
    tracer = TracerProvider().get_tracer("bench")
    caller = SpanContext(0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7, is_remote=True,
                         trace_flags=TraceFlags(1), trace_state=TraceState([("vendor", "v1")]))
    parent = baggage.set_baggage("tenant", "acme", trace.set_span_in_context(NonRecordingSpan(caller)))
    otel_context.attach(parent)  # the request's context, as the middleware leaves it
    span = tracer.start_span("server", parent)
    sdk = RequestContext("r", "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7")
    sdk.server_span = span
    bare = RequestContext("r", "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7")
    return (lambda: worker_hop_headers(sdk)), (lambda: worker_hop_headers(bare))


async def _app(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def _receive() -> dict[str, Any]:
    return {"type": "http.request", "body": b""}


async def _send(message: Any) -> None:
    pass


_SCOPE = {"type": "http", "method": "POST", "path": "/v1/chat/completions",
          "headers": [(b"host", b"fe"), (b"content-type", b"application/json"),
                      (b"authorization", b"Bearer sk-key-number-three-000000"),
                      (b"user-agent", b"OpenAI/Python 1.0")]}


def _timed_sync(func: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        func()
    return (time.perf_counter() - start) / calls * 1e6


async def _timed_asgi(app: Any, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        await app(_SCOPE, _receive, _send)
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    inject, minimal = _hop_contenders()
    keyed = SharedSecretMiddleware(_app, secrets=["sk-key-number-one-11111111",
                                                  "sk-key-number-two-22222222",
                                                  "sk-key-number-three-000000"])
    samples: dict[str, list[float]] = {k: [] for k in ("inject", "minimal", "bare", "keyed")}
    loop = asyncio.new_event_loop()
    for _ in range(args.rounds):
        samples["inject"].append(_timed_sync(inject, args.calls))
        samples["minimal"].append(_timed_sync(minimal, args.calls))
        samples["bare"].append(loop.run_until_complete(_timed_asgi(_app, args.calls)))
        samples["keyed"].append(loop.run_until_complete(_timed_asgi(keyed, args.calls)))
    med = {k: statistics.median(v) for k, v in samples.items()}
    print("| contender | median µs/call | vs its anchor |")
    print("|---|---|---|")
    print(f"| hop headers, no SDK (traceparent only) | {med['minimal']:.2f} | 1.00 |")
    print(f"| hop headers, SDK span (propagate.inject) | {med['inject']:.2f} | "
          f"{med['inject'] / med['minimal']:.2f} |")
    print(f"| bare ASGI app | {med['bare']:.2f} | 1.00 |")
    print(f"| behind SharedSecretMiddleware (3 keys, valid Bearer) | {med['keyed']:.2f} | "
          f"{med['keyed'] / med['bare']:.2f} (+{med['keyed'] - med['bare']:.2f} µs) |")


if __name__ == "__main__":
    main()
