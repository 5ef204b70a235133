"""Per-request cost of the tracing contenders in CPU instructions, under callgrind.

Time on a shared 2-vCPU VM moves by ±10 µs from run to run, as much as the id-only
overheads being compared. Instructions executed do not depend on the neighbours:
callgrind counts them exactly, so this harness gives the load-independent side of
`bench_tracing.py`'s comparison (same apps, same checks, same request).

Each contender runs in its own process under ``valgrind --tool=callgrind``: build the
app, 200 warm-up requests, then N requests; run once with N = 100 and once with
N = 1,100, and the difference over 1,000 is the per-request count — start-up, imports
and warm-up cancel out. Kernel work (syscalls such as ``getrandom`` and ``write``)
is not counted; the time harness shows it. Expect about 30 s per contender; two run
at a time.

``--cache-sim`` runs ``valgrind --tool=cachegrind --cache-sim=yes`` instead and also
reports simulated first-level instruction and data cache misses per request (about
twice as slow): where time and instructions disagree, misses are the next suspect.

Usage: ``.venv/bin/python benchmarks/bench_tracing_instructions.py [--cache-sim]``;
prints markdown.
Needs valgrind (``apt-get install -y valgrind``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_tracing as bench  # a sibling script, not a package

# The time harness's in-process contenders but Starlette + full, which no target reads
# and which is the slowest to run under callgrind.
CONTENDERS = [name for name in bench.INPROC if name != "starlette+ridtrace-full"]
WARM_UP, SHORT, LONG = 200, 100, 1100
_COLLECTED = re.compile(r"Collected : (\d+)")


def drive(name: str, requests: int) -> None:
    """Subprocess entry point: build one contender, check it, warm it up, then serve."""
    log_dir = Path(tempfile.mkdtemp(prefix="ridtrace-icount-"))
    built = bench.build(name, log_dir)
    headers = bench._HEADERS_NOID if name.endswith("@noid") else bench._HEADERS

    async def run(count: int) -> None:
        for _ in range(count):
            await built.app(bench._scope(headers), bench._receive, bench._send)
            await asyncio.sleep(0)  # a loop turn: event lines go out at the next one

    async def main() -> None:
        await bench._check(name, built)
        await run(WARM_UP)
        await run(requests)

    asyncio.run(main())


_CACHEGRIND = {
    "instructions": re.compile(r"I\s+refs:\s+([\d,]+)"),
    "I1 misses": re.compile(r"I1\s+misses:\s+([\d,]+)"),
    "D1 misses": re.compile(r"D1\s+misses:\s+([\d,]+)"),
}


def count(name: str, requests: int, cache_sim: bool) -> dict[str, int]:
    """Totals of one whole process driving `requests` requests through `name`."""
    tool = (
        ["--tool=cachegrind", "--cache-sim=yes", "--cachegrind-out-file=/dev/null"]
        if cache_sim else ["--tool=callgrind", "--callgrind-out-file=/dev/null"]
    )
    proc = subprocess.run(
        ["valgrind", *tool, sys.executable, __file__, "--drive", name,
         "--requests", str(requests)],
        capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"}, check=False,
    )
    patterns = _CACHEGRIND if cache_sim else {"instructions": _COLLECTED}
    found = {key: pattern.search(proc.stderr) for key, pattern in patterns.items()}
    if proc.returncode != 0 or not all(found.values()):
        raise SystemExit(f"{name}: valgrind run failed:\n{proc.stderr[-2000:]}")
    return {key: int(match.group(1).replace(",", "")) for key, match in found.items() if match}


def per_request(name: str, cache_sim: bool = False) -> dict[str, float]:
    short, long = count(name, SHORT, cache_sim), count(name, LONG, cache_sim)
    return {key: (long[key] - short[key]) / (LONG - SHORT) for key in long}


def misses_report(results: dict[str, dict[str, float]]) -> list[str]:
    """Simulated cache misses per request over bare, and the targets' ratios in misses."""
    lines = [
        "### Simulated L1 cache misses per request (cachegrind)",
        "",
        "| contender | I1 misses over bare | D1 misses over bare |",
        "|---|---:|---:|",
    ]
    over: dict[str, dict[str, float]] = {}
    for name, values in results.items():
        bare = results[bench._bare_of(name)]
        over[name] = {key: values[key] - bare[key] for key in values}
        if name != bench._bare_of(name):
            lines.append(f"| {bench.LABELS[name]} | {over[name]['I1 misses']:+,.0f} "
                         f"| {over[name]['D1 misses']:+,.0f} |")
    for key in ("I1 misses", "D1 misses"):
        lines += ["", f"{key}:", *(f"- {t}" for t in bench._targets(
            {name: values[key] for name, values in over.items()}, "fastapi"))]
    return lines


def report(instructions: dict[str, float]) -> list[str]:
    """Instructions per request, overhead over bare, and the targets' ratios."""
    lines = [
        "### Instructions per request (callgrind, load-independent)",
        "",
        "| contender | instructions/request | overhead | × bare |",
        "|---|---:|---:|---:|",
    ]
    overhead: dict[str, float] = {}
    for name, value in instructions.items():
        bare = instructions[bench._bare_of(name)]
        overhead[name] = value - bare
        over = "—" if name == bench._bare_of(name) else f"{overhead[name] / 1000:+,.1f} k"
        lines.append(
            f"| {bench.LABELS[name]} | {value / 1000:,.1f} k | {over} | {value / bare:.2f} |"
        )
    return [
        *lines, "", *(f"- {t}" for t in bench._targets(overhead, "fastapi")),
        *bench.side_ratios(overhead),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contenders", help="comma-separated subset")
    parser.add_argument("--cache-sim", action="store_true",
                        help="cachegrind with simulated caches: misses as well (slower)")
    parser.add_argument("--drive", help=argparse.SUPPRESS)
    parser.add_argument("--requests", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.drive:
        drive(args.drive, args.requests)
        return 0
    if not shutil.which("valgrind"):
        raise SystemExit("valgrind is not installed: `sudo apt-get install -y valgrind`")
    names = args.contenders.split(",") if args.contenders else CONTENDERS
    with ThreadPoolExecutor(max_workers=2) as pool:
        measured = list(pool.map(lambda name: per_request(name, args.cache_sim), names))
    results = dict(zip(names, measured, strict=True))
    print("\n".join(report({name: r["instructions"] for name, r in results.items()})))
    if args.cache_sim:
        print("\n" + "\n".join(misses_report(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
