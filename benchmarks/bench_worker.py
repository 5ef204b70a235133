"""CPU per request of ``ridtrace serve worker`` against the minimal aiohttp echo worker.

The ``work`` phase of ``bench_frontend.py`` on its own, with the same harness (its
anchor, its ``wrk`` script, its ``/proc`` CPU reading), so the worker can be measured
in a minute instead of the whole frontend table. Contenders, interleaved per round with
the order rotated, all pinned to CPU 1 with ``wrk`` when ``taskset`` exists:

* ``minimal worker``: bench_frontend's aiohttp echo worker, the anchor.
* ``worker alone``: ``ridtrace serve worker`` as a user runs it (JSON-lines log file,
  tracer provider, ``worker.start`` / ``worker.end`` lines).
* ``worker, no telemetry``: the same app and server, no log sink, no tracer provider.

Usage: ``.venv/bin/python benchmarks/bench_worker.py [--rounds 5] [--seconds 3]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import bench_frontend as harness  # a sibling script, not a package

CONTENDERS = ("minimal worker", "worker alone", "worker, no telemetry")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--connections", type=int, default=32)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ridtrace-bench-worker-"))
    script = tmp / "work.lua"
    script.write_text(harness._lua(harness._envelope(harness.SHORT_WORDS), unique_ids=True))
    serve_anchor = [sys.executable, harness.__file__, "--serve"]
    argv = {
        "minimal worker": [*serve_anchor, "minimal worker", "--worker", "-"],
        "worker alone": [sys.executable, "-m", "ridtrace", "serve", "worker",
                         "--log-file", str(tmp / "w.jsonl")],
        "worker, no telemetry": [*serve_anchor, "worker, no telemetry", "--worker", "-"],
    }
    procs = {}
    urls = {}
    try:
        for name in CONTENDERS:
            port = harness._free_port()
            procs[name] = harness._start([*harness._pin(1), *argv[name], "--port", str(port)],
                                         port)
            urls[name] = f"http://127.0.0.1:{port}/v1/work"
        for name in CONTENDERS:  # warm-up
            harness._wrk(urls[name], 1, args.connections, script, procs[name].pid)
        results: dict[str, list[float]] = {name: [] for name in CONTENDERS}
        for round_no in range(args.rounds):
            shift = round_no % len(CONTENDERS)
            for name in CONTENDERS[shift:] + CONTENDERS[:shift]:
                run = harness._wrk(urls[name], args.seconds, args.connections, script,
                                   procs[name].pid)
                results[name].append(run["cpu_ms"])
    finally:
        for proc in procs.values():
            proc.terminate()
        for proc in procs.values():
            proc.wait(10)
    print(f"{args.rounds} interleaved rounds x {args.seconds:g}s; wrk -c{args.connections}; "
          "CPU of the worker process from /proc\n")
    print("| contender | CPU per request, ms | vs minimal worker (per round) |")
    print("|---|---:|---:|")
    anchor = results["minimal worker"]
    for name in CONTENDERS:
        ratios = [mine / base for mine, base in zip(results[name], anchor, strict=True)]
        print(f"| {name} | {harness._spread(results[name])} | {harness._spread(ratios)}× |")
    served, quiet = results["worker alone"], results["worker, no telemetry"]
    delta = statistics.median(s - q for s, q in zip(served, quiet, strict=True))
    print(f"\ntelemetry per request (worker alone − no telemetry, per round, median): "
          f"{delta * 1000:.0f} µs")


if __name__ == "__main__":
    main()
