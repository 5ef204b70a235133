"""``ridtrace analyze`` on the pandas engine vs the Dask engine (local cluster), 1M–20M lines.

For each size the script runs, interleaved, as subprocesses:

* ``pandas``: ``ridtrace analyze DIR --format json -q -o FILE``;
* ``dask``: the same with ``--engine dask`` — a ``LocalCluster`` sized to the machine
  (here 2 worker processes × 1 thread), started and stopped by the command, so its
  start-up is in the time.

Wall time, and memory sampled every 0.2 s with psutil over the whole process tree:
the peak RSS of each process (the command itself; each Dask worker) and the peak of
their sum. The two JSON reports must be identical, or the run fails.

Data (``benchmarks/out/dask/``, gitignored): 1M and 5M are copies of the issue-4
benchmark logs (``benchmarks/out/forensics/``, generated with
``ridtrace.testing.synth`` when absent); 20M is four copies of 5M whose ids and
fingerprints get a per-copy prefix (``"span_id":"c1…``), so requests stay distinct and
the findings are 4× those of 5M.

Usage: ``.venv/bin/python benchmarks/bench_dask.py [--sizes 1000000,5000000,20000000]
[--repeats 1] [--partition-size 64MiB]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out" / "dask"
SOURCE = ROOT / "benchmarks" / "out" / "forensics"
RIDTRACE = str(Path(sys.executable).parent / "ridtrace")
DOCS = ROOT / "docs" / "performance.md"
SECTION = "## Scale-out (Dask)"
ID_KEYS = ("request_id", "x_request_id", "trace_id", "span_id", "parent_span_id", "fp_in",
           "fp_out", "chunk_request_id")
MIB = 1 << 20


def _generate(n: int, logs: Path) -> None:
    from ridtrace.testing.synth import SynthSpec, requests_for_lines, write_logs

    write_logs(logs, SynthSpec(requests=requests_for_lines(n)))


def _copy_shifted(src: Path, dst: Path, copy: int) -> None:
    """`src` with every id and fingerprint prefixed by ``c<copy>``: distinct requests."""
    with src.open("rb") as fin, dst.open("wb") as fout:
        for block in iter(lambda: fin.read(64 * MIB), b""):
            cut = block.rfind(b"\n") + 1
            block, rest = block[:cut], block[cut:]
            for key in ID_KEYS:
                block = block.replace(b'"%s":"' % key.encode(), b'"%s":"c%d' % (key.encode(), copy))
            fout.write(block)
            if rest:
                fin.seek(-len(rest), os.SEEK_CUR)


def dataset(n: int) -> Path:
    """The log directory of `n` lines, built once."""
    logs = OUT / f"lines-{n}" / "logs"
    if logs.is_dir() and any(logs.iterdir()):
        return logs
    logs.mkdir(parents=True, exist_ok=True)
    if n == 20_000_000:
        base = dataset(5_000_000)
        for copy in range(4):
            for f in sorted(base.iterdir()):
                _copy_shifted(f, logs / f"{f.stem}-{copy}{f.suffix}", copy)
    elif (SOURCE / f"lines-{n}" / "logs").is_dir():
        for f in sorted((SOURCE / f"lines-{n}" / "logs").iterdir()):
            shutil.copyfile(f, logs / f.name)
    else:
        _generate(n, logs)
    return logs


def run(argv: list[str]) -> dict[str, Any]:
    """Run `argv`, sampling the RSS of it and of every descendant; return timings."""
    start = time.perf_counter()
    errfile = OUT / "stderr.txt"
    with errfile.open("wb") as err_out:
        proc = psutil.Popen(argv, stdout=subprocess.DEVNULL, stderr=err_out)
    peaks: dict[int, int] = {}
    roles: dict[int, str] = {proc.pid: "main"}
    peak_sum = 0
    while proc.poll() is None:
        total = 0
        try:
            tree = [proc, *proc.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        for p in tree:
            try:
                rss = p.memory_info().rss
                if p.pid not in roles:
                    roles[p.pid] = "worker" if "spawn_main" in " ".join(p.cmdline()) else "other"
            except psutil.Error:
                continue
            peaks[p.pid] = max(peaks.get(p.pid, 0), rss)
            total += rss
        peak_sum = max(peak_sum, total)
        time.sleep(0.2)
    wall = time.perf_counter() - start
    err = errfile.read_text(errors="replace")
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{argv} exited {proc.returncode}: {err[-2000:]}")
    workers = [peaks[pid] for pid, role in roles.items() if role == "worker" and pid in peaks]
    return {
        "wall_s": wall,
        "main_mib": peaks.get(proc.pid, 0) / MIB,
        "worker_mib": max(workers, default=0) / MIB,
        "workers": len(workers),
        "sum_mib": peak_sum / MIB,
    }


def bench(n: int, repeats: int, partition: str) -> dict[str, Any]:
    logs = dataset(n)
    size = sum(f.stat().st_size for f in logs.iterdir()) / MIB
    reports = {e: OUT / f"lines-{n}" / f"report-{e}.json" for e in ("pandas", "dask")}
    argv = {
        "pandas": [RIDTRACE, "analyze", str(logs), "--format", "json", "-q",
                   "-o", str(reports["pandas"])],
        "dask": [RIDTRACE, "analyze", str(logs), "--format", "json", "-q", "--engine", "dask",
                 "--partition-size", partition, "-o", str(reports["dask"])],
    }
    runs: dict[str, list[dict[str, Any]]] = {"pandas": [], "dask": []}
    load = []
    for _ in range(repeats):
        for engine in ("pandas", "dask"):
            runs[engine].append(run(argv[engine]))
            load.append(os.getloadavg()[0])
    docs = {e: json.loads(p.read_text()) for e, p in reports.items()}
    if docs["pandas"] != docs["dask"]:
        raise RuntimeError(f"{n} lines: the engines disagree")
    out: dict[str, Any] = {"lines": docs["pandas"]["summary"]["lines"], "input_mib": size,
                           "errors": docs["pandas"]["summary"]["errors"],
                           "load": statistics.median(load)}
    for engine, rs in runs.items():
        best = min(rs, key=lambda r: r["wall_s"])
        out[engine] = {k: statistics.median(r[k] for r in rs) if k == "wall_s" else best[k]
                       for k in best}
    print(json.dumps(out), flush=True)
    return out


def table(results: list[dict[str, Any]], partition: str) -> str:
    rows = [
        "| lines | input | pandas time | dask time | dask / pandas | pandas peak RSS "
        "| dask: command peak | dask: per-worker peak | dask: all processes | load avg |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        p, d = r["pandas"], r["dask"]
        rows.append(
            f"| {r['lines']:,} | {r['input_mib']:,.0f} MiB | {p['wall_s']:.1f} s "
            f"| {d['wall_s']:.1f} s | {d['wall_s'] / p['wall_s']:.2f}× | {p['main_mib']:,.0f} MiB "
            f"| {d['main_mib']:,.0f} MiB | {d['worker_mib']:,.0f} MiB ({d['workers']} workers) "
            f"| {d['sum_mib']:,.0f} MiB | {r['load']:.1f} |"
        )
    return "\n".join(rows) + (
        f"\n\nPartition size {partition}. Reproduce: `.venv/bin/python benchmarks/bench_dask.py "
        f"--sizes {','.join(str(r['lines'] // 1_000_000 * 1_000_000) for r in results)} "
        f"--partition-size {partition}`\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000000,5000000,20000000")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--partition-size", default="64MiB")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    results = [bench(int(n), args.repeats, args.partition_size) for n in args.sizes.split(",")]
    (OUT / "results.json").write_text(json.dumps(results, indent=2))
    print(table(results, args.partition_size))


if __name__ == "__main__":
    main()
