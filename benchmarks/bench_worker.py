"""CPU per request of ``ridtrace serve worker`` against the minimal aiohttp echo worker.

Without ``--in-process`` this runs ``bench_frontend.py --phases work``: the worker
phase alone, with that harness (its anchor, its ``wrk`` script, its ``/proc`` CPU
reading), so the worker can be measured in a minute instead of the whole frontend
table. Contenders, interleaved per round with the order rotated:

* ``minimal worker``: bench_frontend's aiohttp echo worker, the anchor.
* ``worker alone``: ``ridtrace serve worker`` as a user runs it (JSON-lines log file,
  tracer provider, ``worker.start`` / ``worker.end`` lines).
* ``worker, no telemetry``: the same app and server, no log sink, no tracer provider.

``--in-process`` measures the same app without a server or a socket instead: work
envelopes driven straight through the ASGI app on one event loop (16 per loop turn),
CPU time per request with and without the telemetry ``ridtrace serve`` configures, in
fresh processes, interleaved. That isolates what ridtrace's own code costs from
uvicorn, the kernel and the load on the machine.

Usage: ``.venv/bin/python benchmarks/bench_worker.py [--rounds 5] [--seconds 3]``
``[--in-process]``
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import bench_frontend as harness  # a sibling script, not a package


def drive_in_process(mode: str, batches: int = 500, per_turn: int = 16) -> float:
    """Child process: µs of CPU per request through the worker app, no server (the
    least of five runs of ``batches`` × ``per_turn`` requests)."""
    from loguru import logger

    from ridtrace.frontend_plugin import WorkerSettings, create_worker_app
    from ridtrace.tracing import TracingSettings

    logger.remove()
    if mode == "served":  # what `ridtrace serve worker --log-file` configures
        from ridtrace.tracing import configure_logging, configure_metrics, configure_tracing

        log = Path(tempfile.mkdtemp(prefix="ridtrace-bench-worker-")) / "worker.jsonl"
        configure_logging(log, service="worker-1", level="INFO")
        configure_tracing("worker-1")
        configure_metrics("worker-1")
        app = create_worker_app(WorkerSettings())
    else:
        app = create_worker_app(WorkerSettings(), tracing=TracingSettings(log_lifecycle=False))
    prompt = " ".join(["fox"] * harness.SHORT_WORDS)
    headers = [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")]

    async def one(n: int) -> None:
        body = harness._envelope(harness.SHORT_WORDS).replace("bench-RID", f"bench-{n}")
        assert prompt in body
        messages = [{"type": "http.request", "body": body.encode(), "more_body": False}]
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": "POST", "scheme": "http", "path": "/v1/work",
                 "raw_path": b"/v1/work", "query_string": b"", "root_path": "",
                 "headers": headers, "client": ("127.0.0.1", 5000),
                 "server": ("127.0.0.1", 8000)}
        statuses: list[int] = []

        async def receive() -> Any:
            return messages.pop()

        async def send(message: Any) -> None:
            if message["type"] == "http.response.start":
                statuses.append(message["status"])

        await app(scope, receive, send)
        if statuses != [200]:
            raise SystemExit(f"request {n} answered {statuses}")

    async def run() -> float:
        n = 0
        started = time.process_time()
        for _ in range(batches):
            for _ in range(per_turn):
                n += 1
                await one(n)
            await asyncio.sleep(0)  # a loop turn, as a server has between reads
        return (time.process_time() - started) / n * 1e6

    asyncio.run(run())  # warm-up
    # The least of five runs: the one other processes' load disturbed least.
    return min(asyncio.run(run()) for _ in range(5))


def in_process(rounds: int) -> None:
    results: dict[str, list[float]] = {"served": [], "quiet": []}
    for _ in range(rounds):
        for mode in results:
            out = subprocess.run([sys.executable, __file__, "--drive", mode], check=True,
                                 capture_output=True, text=True).stdout
            results[mode].append(float(out))
    print(f"{rounds} interleaved rounds; per round the least of 5 runs of 8,000 work "
          "envelopes through the ASGI app\n")
    print("| worker app | CPU per request, µs |\n|---|---:|")
    names = {"served": "as `ridtrace serve worker` configures it", "quiet": "no telemetry"}
    for mode, values in results.items():
        print(f"| {names[mode]} | {harness._spread(values)} |")
    delta = [s - q for s, q in zip(results["served"], results["quiet"], strict=True)]
    print(f"\ntelemetry per request (per round): {harness._spread(delta)} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--in-process", action="store_true")
    parser.add_argument("--drive", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.drive:
        print(drive_in_process(args.drive))
        return
    if args.in_process:
        in_process(args.rounds)
        return
    # The worker phase with servers is bench_frontend's own ``work`` phase: one harness.
    subprocess.run(
        [sys.executable, harness.__file__, "--phases", "work", "--rounds", str(args.rounds),
         "--seconds", str(args.seconds), "--connections", str(args.connections)],
        check=True,
    )

if __name__ == "__main__":
    main()
