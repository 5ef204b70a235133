"""`ridtrace analyze --follow` (issue 16): latency, sustained ingest, memory over a long run.

The follower always runs as a real ``ridtrace analyze DIR --follow --format json``
subprocess pinned to one CPU (``sched_setaffinity``), fed by a writer in this process
that replays `ridtrace.testing.synth` logs into DIR in time order across files, as
running services write them.

* ``latency``: the writer replays at a steady rate (``--latency-rate`` lines/s) logs
  with many faults, and records when each line was flushed. For every finding printed,
  latency = when the follower's stdout line was read − when the latest of its evidence
  lines was flushed. The line that made a finding certain can only be later than that,
  so this is an upper bound of the true latency. Target: ≤ 2 s.
* ``ingest``: the writer appends everything at once (far faster than any follower), then
  the follower is stopped with SIGTERM (its last round drains what is written);
  lines/s = lines / (exit − start of writing), and the CPU the follower used (``wait4``).
  Target: ≥ 200k lines/s on one core with all rules on.
* ``memory``: a long synthetic run at constant rate (``--memory-minutes`` of log time,
  replayed compressed at ``--memory-rate`` lines/s) with ``--window 60s``; the
  follower's RSS is sampled every second. Target: flat.

Usage: ``.venv/bin/python benchmarks/bench_follow.py [--ingest-lines 1000000]
[--latency-seconds 20] [--memory-minutes 30] [--settle 1s --settle 0]`` (``--settle``:
the follower's, each value a latency run of its own)
"""

from __future__ import annotations

import argparse
import heapq
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

from bench_forensics import FLOOR, timed

from ridtrace.forensics.reading.scan import LEAN_FIELDS
from ridtrace.testing.synth import SynthSpec, requests_for_lines, write_logs

OUT = Path(__file__).parent / "out" / "follow"
_TIME = re.compile(rb'"time":"([^"]+)"')


def _merged(src: Path) -> tuple[list[str], list[tuple[int, bytes]]]:
    """File names and (file index, line) of every line, in time order across files."""
    files = sorted(p for p in src.iterdir() if p.suffix == ".jsonl")
    streams = []
    for k, path in enumerate(files):
        lines = path.read_bytes().splitlines(keepends=True)
        streams.append([(_TIME.search(line).group(1), k, line) for line in lines])  # type: ignore[union-attr]
    return [p.name for p in files], [(k, line) for _, k, line in heapq.merge(*streams)]


def _start_follower(dst: Path, *extra: str) -> tuple[subprocess.Popen[bytes], list[tuple[float, bytes]]]:
    cpu = sorted(os.sched_getaffinity(0))[-1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ridtrace", "analyze", str(dst), "--follow", "--format", "json",
         "--poll-interval", "0.25s", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
    )
    printed: list[tuple[float, bytes]] = []

    def pump() -> None:
        assert proc.stdout is not None
        for line in iter(proc.stdout.readline, b""):
            printed.append((time.monotonic(), line))

    threading.Thread(target=pump, daemon=True).start()
    assert proc.stderr is not None
    proc.stderr.readline()  # "following N file(s)": it has looked at the directory
    return proc, printed


def _stop(proc: subprocess.Popen[bytes]) -> tuple[float, float, dict[str, object]]:
    """SIGTERM, wait; (exit time, CPU seconds, summary)."""
    import json

    os.kill(proc.pid, signal.SIGTERM)
    _, _, usage = os.wait4(proc.pid, 0)
    ended = time.monotonic()
    assert proc.stderr is not None
    summary = json.loads(proc.stderr.read().strip().splitlines()[-1])
    return ended, usage.ru_utime + usage.ru_stime, summary


def _replay(names: list[str], lines: list[tuple[int, bytes]], dst: Path, rate: float | None,
            stamps: dict[tuple[str, int], float] | None = None) -> None:
    handles = [open(dst / name, "ab") for name in names]  # noqa: SIM115
    numbers = [0] * len(names)
    step = 200 if rate is None else max(1, int(rate / 100))
    started = time.monotonic()
    for start in range(0, len(lines), step):
        batch = lines[start : start + step]
        for k, line in batch:
            handles[k].write(line)
        for handle in handles:
            handle.flush()
        if stamps is not None:
            now = time.monotonic()
            for k, _ in batch:
                numbers[k] += 1
                stamps[(names[k], numbers[k])] = now
        if rate is not None:
            ahead = (start + len(batch)) / rate - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(ahead)
    for handle in handles:
        handle.close()


def _fresh(name: str) -> Path:
    dst = OUT / name
    if dst.exists():
        for p in dst.iterdir():
            p.unlink()
    dst.mkdir(parents=True, exist_ok=True)
    return dst


def bench_latency(seconds: float, rate: float, settle: str | None = None) -> None:
    import json

    lines = int(seconds * rate)
    spec = SynthSpec(requests=requests_for_lines(lines), crossed=15, collisions=15,
                     duplicates=15, rate_per_s=rate / 7.5)
    src = OUT / "latency-src"
    write_logs(src, spec)
    names, merged = _merged(src)
    dst = _fresh("latency")
    proc, printed = _start_follower(dst, *(["--settle", settle] if settle else []))
    stamps: dict[tuple[str, int], float] = {}
    started_cpu, began = _cpu_seconds(proc.pid), time.monotonic()
    _replay(names, merged, dst, rate, stamps)
    time.sleep(1.0)
    share = (_cpu_seconds(proc.pid) - started_cpu) / (time.monotonic() - began)
    _, _, summary = _stop(proc)
    latencies = []
    for at, text in printed:
        finding = json.loads(text)
        written = max(stamps[(Path(e["file"]).name, e["line"])] for e in finding["evidence"])
        latencies.append(at - written)
    latencies.sort()
    print(f"latency (--settle {settle or 'default'}): {len(merged)} lines at {rate:.0f} "
          f"lines/s, {len(latencies)} findings "
          f"({summary['errors']} errors): median {statistics.median(latencies):.3f} s, "
          f"p95 {latencies[int(0.95 * (len(latencies) - 1))]:.3f} s, max {latencies[-1]:.3f} s; "
          f"the follower used {share:.1%} of a core meanwhile")


def bench_ingest(n_lines: int, rounds: int) -> None:
    src = OUT / f"ingest-src-{n_lines}"
    if not src.exists():
        write_logs(src, replace(SynthSpec(), requests=requests_for_lines(n_lines),
                                crossed=20, collisions=20, duplicates=20))
    names, merged = _merged(src)
    results = []
    for _ in range(rounds):
        dst = _fresh("ingest")
        proc, _ = _start_follower(dst)
        started_cpu = _cpu_seconds(proc.pid)  # start-up: interpreter, imports, first look
        began = time.monotonic()
        _replay(names, merged, dst, None)
        written = time.monotonic()
        ended, cpu, summary = _stop(proc)
        assert summary["lines"] == len(merged), summary
        results.append((len(merged) / (ended - began), len(merged) / cpu,
                        len(merged) / (cpu - started_cpu)))
        print(f"ingest round: {len(merged)} lines, {summary['errors']} errors, "
              f"{ended - began:.2f} s wall ({written - began:.2f} s writing), {cpu:.2f} CPU-s "
              f"({started_cpu:.2f} before the first line) → {results[-1][0]:,.0f} lines/s wall, "
              f"{results[-1][1]:,.0f} lines/CPU-s, {results[-1][2]:,.0f} after start-up")
    print(f"ingest median: {statistics.median(r[0] for r in results):,.0f} lines/s wall, "
          f"{statistics.median(r[1] for r in results):,.0f} lines per CPU-second with start-up, "
          f"{statistics.median(r[2] for r in results):,.0f} after it (sustained)")
    # The floor: DuckDB only numbering and extracting the columns the follower reads,
    # over the same lines on the same one CPU — no per-span pick, line check or rule.
    cpu = sorted(os.sched_getaffinity(0))[-1]
    files = [str(p) for p in sorted(src.iterdir()) if p.suffix == ".jsonl"]
    floors = []
    for _ in range(rounds):
        _, floor_cpu, _, out, code = timed(
            ["taskset", "-c", str(cpu), sys.executable, "-c", FLOOR, ",".join(LEAN_FIELDS), *files])
        assert code == 0 and int(out) == len(merged), (code, out)
        floors.append(len(merged) / floor_cpu)
    print(f"floor (DuckDB's scan of the same lines alone, one CPU): "
          f"{statistics.median(floors):,.0f} lines per CPU-second")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds `pid` has used so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def bench_memory(minutes: float, rate: float) -> None:
    req_per_s = 100.0
    spec = SynthSpec(requests=int(minutes * 60 * req_per_s), rate_per_s=req_per_s,
                     crossed=10, collisions=10, duplicates=10)
    src = OUT / f"memory-src-{minutes:g}"
    if not src.exists():
        write_logs(src, spec)
    names, merged = _merged(src)
    dst = _fresh("memory")
    proc, _ = _start_follower(dst, "--window", "60s")
    samples: list[tuple[float, int]] = []
    done = threading.Event()

    def sample() -> None:
        began = time.monotonic()
        while not done.is_set():
            samples.append((time.monotonic() - began, _rss_kib(proc.pid)))
            done.wait(1.0)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _replay(names, merged, dst, rate)
    done.set()
    sampler.join()
    summary = _stop(proc)[2]
    n = len(samples)
    picks = [samples[min(n - 1, int(f * n))] for f in (0.1, 0.25, 0.5, 0.75, 0.9)] + [samples[-1]]
    print(f"memory: {len(merged)} lines, {minutes:g} min of log time replayed in "
          f"{samples[-1][0]:.0f} s, window 60 s, {summary['errors']} errors; RSS MiB at "
          + ", ".join(f"{t:.0f}s {kib / 1024:.0f}" for t, kib in picks)
          + f"; max {max(k for _, k in samples) / 1024:.0f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ingest-lines", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency-seconds", type=float, default=20.0)
    parser.add_argument("--latency-rate", type=float, default=2000.0)
    parser.add_argument("--memory-minutes", type=float, default=30.0)
    parser.add_argument("--memory-rate", type=float, default=25000.0)
    parser.add_argument("--only", choices=["latency", "ingest", "memory"])
    parser.add_argument("--settle", action="append",
                        help="latency: the follower's --settle; repeat to run each in turn")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if args.only in (None, "latency"):
        for settle in args.settle or [None]:
            bench_latency(args.latency_seconds, args.latency_rate, settle)
    if args.only in (None, "ingest"):
        bench_ingest(args.ingest_lines, args.rounds)
    if args.only in (None, "memory"):
        bench_memory(args.memory_minutes, args.memory_rate)


if __name__ == "__main__":
    main()
