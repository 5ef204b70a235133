"""What a process of ridtrace's costs before its work: a server's start, a small view.

Contenders, each in a fresh process, interleaved per round (trees alternating):

* ``serve worker``: ``python -m ridtrace serve worker`` from spawn to its first answer
  on ``/health``; CPU-s is the process's own (``/proc/PID/stat``) at that answer.
* ``serve frontend``: the same for ``ridtrace serve frontend`` (a worker URL nothing
  serves: the frontend starts without one).
* ``span query, small``: in a child process, the span query every view (``trace``,
  ``export``, ``audit``) and every group of a Dask read runs, on the events of a
  200-request synthetic log directory, 20 times: the median call, wall and CPU-s.

* ``analyze small``: ``ridtrace analyze`` of the same directory (0.9 MB), run to its
  end as a user runs it; wall time and CPU-s from ``os.wait4``.
* ``analyze small, in process``: the same command run 20 times in one process (click's
  runner), as the demo's proof and a caller of the Python API run it: the median run.

A load balancer that scales workers out and a test suite that starts hundreds of them
pay a server's start whole; a Dask worker and the demo pay the query's set-up per call.

``--baseline SRC`` runs every contender from another checkout's ``src`` too (``git
worktree add /tmp/base REV``, then ``--baseline /tmp/base/src``), for a before/after.

Usage: ``.venv/bin/python benchmarks/bench_start.py [--rounds 8] [--baseline SRC]``
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

THIS_TREE = str(Path(__file__).resolve().parents[1] / "src")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_start(src: str, kind: str, logs: Path) -> tuple[float, float]:
    """Wall and CPU seconds from spawn to the first answer of ``serve KIND``."""
    port = _free_port()
    argv = [sys.executable, "-m", "ridtrace", "serve", kind, "--port", str(port),
            "--log-file", str(logs / f"{kind}-{port}.jsonl")]
    if kind == "frontend":
        argv += ["--worker", "http://127.0.0.1:9"]
    started = time.monotonic()
    process = subprocess.Popen(argv, env={**os.environ, "PYTHONPATH": src},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with httpx.Client(timeout=1.0) as client:
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"serve {kind} exited with {process.returncode}")
                try:
                    client.get(f"http://127.0.0.1:{port}/health")
                    break
                except httpx.TransportError:
                    time.sleep(0.01)
        return time.monotonic() - started, _cpu_seconds(process.pid)
    finally:
        process.terminate()
        process.wait(timeout=30)


_SPAN_QUERY = """
import statistics, sys, time
from ridtrace.forensics.reading.events import load_events
from ridtrace.forensics.records.spans import build_requests
events = load_events([sys.argv[1]]).events
runs = []
for _ in range(20):
    wall, cpu = time.perf_counter(), time.process_time()
    build_requests(events)
    runs.append((time.perf_counter() - wall, time.process_time() - cpu))
print(statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
"""


_ANALYZE_IN_PROCESS = """
import statistics, sys, time
from click.testing import CliRunner
from ridtrace.cli.main import main
args = ["analyze", sys.argv[1], "-q", "--format", "json"]
runner = CliRunner()
runner.invoke(main, args)  # imports and first-use set-up out of the timed runs
runs = []
for _ in range(20):
    wall, cpu = time.perf_counter(), time.process_time()
    runner.invoke(main, args)
    runs.append((time.perf_counter() - wall, time.process_time() - cpu))
print(statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
"""


def _child_medians(src: str, code: str, logs: Path) -> tuple[float, float]:
    done = subprocess.run([sys.executable, "-c", code, str(logs)], check=True,
                          env={**os.environ, "PYTHONPATH": src}, capture_output=True, text=True)
    wall, cpu = done.stdout.split()
    return float(wall), float(cpu)


def span_query_small(src: str, logs: Path) -> tuple[float, float]:
    """Median wall and CPU seconds of one span query over a small directory's events."""
    return _child_medians(src, _SPAN_QUERY, logs)


def analyze_small(src: str, logs: Path) -> tuple[float, float]:
    """Wall and CPU seconds of ``ridtrace analyze`` of a small log directory."""
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "ridtrace", "analyze", str(logs), "-q", "--format", "json"],
        env={**os.environ, "PYTHONPATH": src}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 1):  # 1: the findings it plants
        raise RuntimeError(f"analyze exited with {os.waitstatus_to_exitcode(status)}")
    return time.monotonic() - started, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--baseline", help="another checkout's src directory")
    args = parser.parse_args()
    trees = {"this": THIS_TREE} | ({"baseline": args.baseline} if args.baseline else {})
    for src in trees.values():  # byte-code first, as `make` does, so no round compiles
        subprocess.run([sys.executable, "-m", "compileall", "-q", src], check=True)
    from ridtrace.testing.synth import SynthSpec, write_logs

    with tempfile.TemporaryDirectory(prefix="bench-start-") as tmp:
        small, server_logs = Path(tmp) / "small", Path(tmp) / "servers"
        small.mkdir()
        server_logs.mkdir()
        write_logs(small, SynthSpec(requests=200, seed=1, crossed=1, collisions=1))
        results: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for round_no in range(args.rounds):
            names = list(trees) if round_no % 2 == 0 else list(trees)[::-1]
            for name in names:
                src = trees[name]
                for kind in ("worker", "frontend"):
                    results.setdefault((f"serve {kind}", name), []).append(
                        server_start(src, kind, server_logs))
                results.setdefault(("span query, small", name), []).append(
                    span_query_small(src, small))
                results.setdefault(("analyze small", name), []).append(
                    analyze_small(src, small))
                results.setdefault(("analyze small, in process", name), []).append(
                    _child_medians(src, _ANALYZE_IN_PROCESS, small))
    print(f"{args.rounds} rounds, medians")
    print("| contender | tree | wall s | CPU-s |")
    print("|---|---|---:|---:|")
    for (contender, name), runs in sorted(results.items()):
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"| {contender} | {name} | {wall:.3f} | {cpu:.3f} |")


if __name__ == "__main__":
    main()
