"""`ridtrace analyze` end to end against DuckDB on the same files (issue 4).

For each size (lines in all, frontend + two workers) the script generates a realistic
ridtrace/1 log set once (cached under ``benchmarks/out/forensics/``, gitignored), then
runs, interleaved and repeated:

* ``analyze``: ``ridtrace analyze DIR --format json -q -o FILE`` as a subprocess, all
  five checks, report written;
* ``duckdb``: a subprocess that imports duckdb, reads the same files with
  ``read_json`` (only the six columns the query needs) and runs the equivalent
  duplicate-in-flight query (spans → frontend requests → overlapping clusters);
* ``pyarrow read``: the floor of any reader built on ``pyarrow.json``, as issue 4
  asks analyze to be: a subprocess that only reads the same files with
  ``pyarrow.json.read_json``, the same six columns DuckDB reads, threads on, and
  counts the rows — no analysis at all.

Wall time, CPU time (user + system) and peak RSS (``os.wait4`` rusage of that child)
per run; medians reported, with the load average seen during the size's runs.
Both answers are checked: analyze must report exactly the injected faults, DuckDB the
same number of duplicate clusters.

Usage: ``.venv/bin/python benchmarks/bench_forensics.py [--sizes 1000000,2000000,5000000]
[--repeats 3] [--write-docs]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out" / "forensics"
PYTHON = sys.executable
RIDTRACE = str(Path(PYTHON).parent / "ridtrace")
DOCS = ROOT / "docs" / "performance.md"
SECTION = "## Forensics"
# Filled in by hand from one interleaved run of the previous and the current reader.
BEFORE_AFTER = """\
| lines, mix | input | before: wall / CPU / peak | after: wall / CPU / peak | DuckDB wall / CPU |
|---|---:|---:|---:|---:|
| 1M, with engine noise | 412 MiB | 11.8 s / 10.8 s / 895 MiB | 10.6 s / 9.9 s / 606 MiB | 3.7 s / 3.2 s |
| 5M, with engine noise | 2,062 MiB | 70.2 s / 52.2 s / 3,530 MiB | 47.0 s / 45.0 s / 1,940 MiB \
| 13.8 s / 13.3 s |
| 5M, lifecycle lines only (the previous benchmark's mix) | 2,287 MiB \
| 57.9 s / 50.1 s / 3,097 MiB | 52.5 s / 52.1 s / 2,644 MiB | 15.1 s / 14.3 s |

Reports byte-identical before and after in all three. So: on logs with the usual
non-lifecycle lines, 14 % less CPU, a third less wall time and 45 % less memory; on
lifecycle-only logs about the same CPU. The gain is smaller than the share of skipped
lines because the skipped lines are still tokenised (to count and check them) and the
split and regex cost ~35 ms per chunk; most of it is the smaller events frame, which
makes `build_requests` and the rules cheaper and the peak lower.
"""

DUCKDB_SCRIPT = r"""
import sys, time, duckdb
t0 = time.perf_counter()
files = sys.argv[1:]
con = duckdb.connect()
con.execute('SET enable_progress_bar = false')
query = '''
with l as (
  select * from read_json($files, format='newline_delimited', ignore_errors=true,
    columns={time:'TIMESTAMPTZ', request_id:'VARCHAR', trace_id:'VARCHAR', span_id:'VARCHAR',
             parent_span_id:'VARCHAR', event:'VARCHAR'})),
r as (
  select trace_id, span_id, first(request_id) rid, min(time) s, max(time) e,
         bool_or(coalesce(event like 'worker.%', false)) w
  from l where span_id is not null group by trace_id, span_id),
f as (select * from r where not w and rid is not null),
o as (select *, max(e) over (partition by rid order by s, span_id
        rows between unbounded preceding and 1 preceding) pe from f),
c as (select *, sum(case when pe is null or s >= pe then 1 else 0 end) over (
        partition by rid order by s, span_id rows unbounded preceding) cl from o)
select count(*) from (select rid, cl from c group by rid, cl having count(*) > 1)
'''
clusters = con.execute(query, {"files": files}).fetchone()[0]
print(clusters, time.perf_counter() - t0)
"""

PYARROW_SCRIPT = r"""
import sys, time
t0 = time.perf_counter()
import pyarrow as pa, pyarrow.json as pj
schema = pa.schema([pa.field("time", pa.timestamp("us", tz="UTC"))] + [
    pa.field(name, pa.string())
    for name in ("request_id", "trace_id", "span_id", "parent_span_id", "event")])
parse = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
read = pj.ReadOptions(use_threads=True, block_size=4 << 20)
rows = sum(pj.read_json(f, read_options=read, parse_options=parse).num_rows for f in sys.argv[1:])
print(rows, time.perf_counter() - t0)
"""


def generate(lines: int) -> tuple[Path, dict[str, object]]:
    """The log set for `lines` lines, generated once and cached with its truth."""
    from ridtrace.testing.synth import SynthSpec, requests_for_lines, write_logs

    target = OUT / f"lines-{lines}"
    meta = target / "truth.json"
    if meta.exists():
        return target, json.loads(meta.read_text())
    spec = SynthSpec(
        requests=requests_for_lines(lines, engine_noise=True), seed=lines % 1000,
        rate_per_s=1500.0, crossed=5, collisions=5, duplicates=5, client_reuse=5,
        deprecated_every=200, engine_noise=True,
    )
    t0 = time.perf_counter()
    truth = write_logs(target / "logs", spec)
    counts: dict[str, int] = {}
    for kind, _ in truth.expected:
        counts[kind] = counts.get(kind, 0) + 1
    info: dict[str, object] = {
        "lines": truth.lines,
        "requests": truth.requests,
        "bytes": sum(p.stat().st_size for p in truth.files),
        "files": [str(p) for p in truth.files],
        "expected": counts,
        "generate_s": round(time.perf_counter() - t0, 1),
    }
    meta.write_text(json.dumps(info, indent=2))
    return target, info


def timed(argv: list[str]) -> tuple[float, float, float, str, int]:
    """Run `argv`; wall time, that child's CPU seconds and peak RSS via os.wait4."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return wall, cpu, usage.ru_maxrss / 1024.0, out.decode(), proc.returncode


def bench(sizes: list[int], repeats: int) -> list[dict[str, object]]:
    """Interleaved analyze/duckdb runs per size; medians and sanity checks."""
    rows = []
    for size in sizes:
        target, info = generate(size)
        files = [str(p) for p in info["files"]]  # type: ignore[union-attr]
        report = target / "report.json"
        runs: dict[str, list[tuple[float, float, float]]] = {
            "analyze": [], "duckdb": [], "pyarrow": []
        }
        loads: list[float] = []
        for rep in range(repeats):
            order = ["analyze", "duckdb", "pyarrow"]
            order = order[rep % 3:] + order[:rep % 3]
            for name in order:
                if name == "analyze":
                    argv = [RIDTRACE, "analyze", str(target / "logs"), "--format", "json",
                            "-q", "-o", str(report)]
                    wall, cpu, rss, _, code = timed(argv)
                    doc = json.loads(report.read_text())["summary"]
                    expected = info["expected"]
                    assert code == 1, code
                    assert doc["lines"] == info["lines"], (doc, info)
                    for kind, count in expected.items():  # type: ignore[union-attr]
                        assert doc[kind] == count, (kind, doc, expected)
                elif name == "pyarrow":
                    wall, cpu, rss, out, code = timed([PYTHON, "-c", PYARROW_SCRIPT, *files])
                    assert code == 0, code
                    assert int(out.split()[0]) == info["lines"], out
                else:
                    wall, cpu, rss, out, code = timed([PYTHON, "-c", DUCKDB_SCRIPT, *files])
                    assert code == 0, code
                    clusters = int(out.split()[-2])
                    assert clusters == info["expected"]["duplicate_in_flight"], out  # type: ignore[index]
                runs[name].append((wall, cpu, rss))
                loads.append(os.getloadavg()[0])
                print(f"{size:>9} {name:<8} {wall:7.2f} s {cpu:7.2f} CPU-s {rss:8.0f} MiB "
                      f"load {loads[-1]:.1f}", flush=True)
        mb = int(info["bytes"]) / 2**20  # type: ignore[call-overload]
        a_t = statistics.median(w for w, _, _ in runs["analyze"])
        d_t = statistics.median(w for w, _, _ in runs["duckdb"])
        a_c = statistics.median(c for _, c, _ in runs["analyze"])
        d_c = statistics.median(c for _, c, _ in runs["duckdb"])
        p_t = statistics.median(w for w, _, _ in runs["pyarrow"])
        p_c = statistics.median(c for _, c, _ in runs["pyarrow"])
        a_m = max(m for _, _, m in runs["analyze"])
        d_m = max(m for _, _, m in runs["duckdb"])
        rows.append({
            "lines": info["lines"], "requests": info["requests"], "input_mib": mb,
            "analyze_s": a_t, "duckdb_s": d_t, "ratio": a_t / d_t,
            "analyze_cpu_s": a_c, "duckdb_cpu_s": d_c, "cpu_ratio": a_c / d_c,
            "pyarrow_s": p_t, "pyarrow_cpu_s": p_c,
            "load_min": min(loads), "load_max": max(loads),
            "analyze_mib": a_m, "duckdb_mib": d_m, "mem_ratio": a_m / mb,
            "us_per_line": a_t / int(info["lines"]) * 1e6,  # type: ignore[call-overload]
        })
    return rows


def table(rows: list[dict[str, object]], repeats: int) -> str:
    """Markdown table of the medians."""
    head = (
        "| lines | input | analyze (median) | DuckDB dup. query (median) | analyze / DuckDB "
        "| CPU-s analyze / DuckDB | analyze peak RSS | peak / input | DuckDB peak RSS "
        "| analyze µs per line | pyarrow.json read only (median) | read only / DuckDB "
        "| CPU-s read only / DuckDB | load avg |\n"
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    body = "".join(
        f"| {r['lines']:,} | {r['input_mib']:,.0f} MiB | {r['analyze_s']:.2f} s "
        f"| {r['duckdb_s']:.2f} s | {r['ratio']:.2f}× "
        f"| {r['analyze_cpu_s']:.1f} / {r['duckdb_cpu_s']:.1f} = {r['cpu_ratio']:.2f}× "
        f"| {r['analyze_mib']:,.0f} MiB "
        f"| {r['mem_ratio']:.2f}× | {r['duckdb_mib']:,.0f} MiB | {r['us_per_line']:.2f} "
        f"| {r['pyarrow_s']:.2f} s | {float(r['pyarrow_s']) / float(r['duckdb_s']):.2f}× "  # type: ignore[arg-type]
        f"| {r['pyarrow_cpu_s']:.1f} / {r['duckdb_cpu_s']:.1f} = "
        f"{float(r['pyarrow_cpu_s']) / float(r['duckdb_cpu_s']):.2f}× "  # type: ignore[arg-type]
        f"| {r['load_min']:.1f}–{r['load_max']:.1f} |\n"
        for r in rows
    )
    return head + body + f"\n({repeats} interleaved repeats per size, medians of wall time.)\n"


def section(rows: list[dict[str, object]], result: str, args: argparse.Namespace) -> str:
    """The docs section: what was measured, the table, verdicts against the targets."""
    big = rows[-1]
    per_line = ", ".join(f"{int(r['lines']) / 1e6:.0f}M: {float(r['us_per_line']):.1f}"  # type: ignore[call-overload,arg-type]
                         for r in rows)
    ratio = float(big["ratio"])  # type: ignore[arg-type]
    mem = float(big["mem_ratio"])  # type: ignore[arg-type]
    speed = (
        f"met: analyze takes {ratio:.2f}× DuckDB's time" if ratio <= 1.0
        else f"**missed**: analyze takes {ratio:.2f}× DuckDB's time ({(ratio - 1) * 100:.0f} % slower)"
    )
    memory = (
        f"met: {mem:.2f}× the input" if mem < 2.0
        else f"**missed**: {mem:.2f}× the input"
    )
    cmd = f".venv/bin/python benchmarks/bench_forensics.py --sizes {args.sizes} " \
          f"--repeats {args.repeats} --write-docs"
    cpu_ratio = float(big["cpu_ratio"])  # type: ignore[arg-type]
    floor = float(big["pyarrow_s"]) / float(big["duckdb_s"])  # type: ignore[arg-type]
    floor_cpu = float(big["pyarrow_cpu_s"]) / float(big["duckdb_cpu_s"])  # type: ignore[arg-type]
    floor_text = (
        f"reading the same six columns with `pyarrow.json` alone, with no analysis at all,\n"
        f"  takes {floor:.2f}× DuckDB's whole query ({floor_cpu:.2f}× in CPU)"
    )
    floor_verdict = (
        "so the parse the issue prescribes already costs more than the anchor: the speed\n"
        "  target cannot be met by a reader built on `pyarrow.json` on this data and machine"
        if floor > 1.0 else
        "so a reader built on `pyarrow.json` can in principle meet the target; analyze's\n"
        "  own overhead is the gap"
    )
    cpu_per_m = ", ".join(
        f"{int(r['lines']) / 1e6:.0f}M: {float(r['analyze_cpu_s']) / int(r['lines']) * 1e6:.1f}"  # type: ignore[call-overload,arg-type]
        for r in rows
    )
    return (
        f"{SECTION}\n\n"
        "`ridtrace analyze` (all five checks, JSON report written) run end to end as a\n"
        "subprocess, against DuckDB reading the same files in a subprocess and running the\n"
        "equivalent duplicate-in-flight query (six columns, spans → frontend requests →\n"
        "overlapping clusters). Logs: `ridtrace.testing.synth` with `engine_noise`, one\n"
        "frontend and two workers, ridtrace/1 schema, ~430 bytes and ~11 lines per request:\n"
        "frontend `request.start`, `request.end`, `dispatch.attempt`, a handler line every\n"
        "other request and a uvicorn access line; per worker `request.start`, `worker.start`,\n"
        "`worker.end`, `request.end`, a uvicorn access line, SGLang's `Prefill batch` line\n"
        "and a `Decode batch` line every other request (no request context). About 45 % of\n"
        "the lines are not lifecycle lines. Injected faults are checked in both answers.\n"
        "Wall time, CPU time (user + system) and peak memory are the child's own\n"
        "(`os.wait4`). Machine: 2 cores, 24 GB, shared with other jobs: the load average\n"
        "during each size's runs is in the table, and on a machine this loaded the CPU-time\n"
        "ratio is the steadier comparison.\n\n"
        f"{result}\n"
        f"- Speed target (analyze no slower than DuckDB), at the largest size: {speed}; in\n"
        f"  CPU time {cpu_ratio:.2f}×.\n"
        f"- The floor: {floor_text};\n  {floor_verdict}.\n"
        f"- Memory target (peak < 2× input), at the largest size: {memory}.\n"
        f"- Linearity: analyze CPU-s per million lines ({cpu_per_m}) stays flat within\n"
        "  the noise (the 1M row carries ~2 CPU-s of start-up: imports of pandas, pyarrow and\n"
        f"  the CLI); wall µs per line ({per_line}) follows the load of the moment.\n\n"
        "How analyze reads (`read_sources(lean=True)`): each 16 MiB chunk is split into\n"
        "lines by Arrow (zero-copy), one regular expression keeps the evidence lines\n"
        "(lifecycle events, fingerprints, deprecated headers, Unlinked errors, Dynamo's\n"
        "request messages) and only those go through `pyarrow.json` with the wide schema;\n"
        "the other lines go through it with three fields (`time`, `schema`, `target`), so\n"
        "they are still counted, bad ones reported with `file:line`, and their times known\n"
        "for `--since`/`--until`. Two threads parse consecutive chunks (Arrow releases the\n"
        "GIL). Findings are identical to the full read (checked on the 1M and 5M sets and\n"
        "in `tests/forensics/test_evidence.py`).\n\n"
        "Why analyze is still slower: profile at 1M lines, CPU per 16 MiB chunk: wide JSON\n"
        "parse of the evidence lines ~100 ms (tokenising alone is ~60 % of it, so fewer\n"
        "columns would not help much), narrow parse of the other lines ~35 ms, split and\n"
        "regex ~35 ms, normalising ~8 ms, reading and joining chunks ~15 ms; then\n"
        "`build_requests` and the five rules ~1.7 CPU-s per million lines and ~2 CPU-s of\n"
        "start-up. DuckDB's reader tokenises this JSON about three times cheaper per byte\n"
        "and its query reads six fields for one check. What would close more of the gap,\n"
        "not done: checking the non-evidence lines structurally instead of parsing them\n"
        "(~15-20 % less parse CPU, but malformed JSON inside such a line would go\n"
        "uncounted), and a faster tokeniser than `pyarrow.json`; the Dask engine spreads\n"
        "the same steps over more cores.\n\n"
        "Before this reader (commit 6a7828b: every line parsed wide, one thread), measured\n"
        "once, interleaved with the new code and DuckDB, load average 2.5–4:\n\n"
        f"{BEFORE_AFTER}\n"
        f"Reproduce: `{cmd}`\n"
    )


def write_docs(text: str) -> None:
    """Replace (or add) the "## Forensics" section of docs/performance.md only."""
    doc = DOCS.read_text() if DOCS.exists() else "# Performance\n"
    start = doc.find(SECTION)
    if start < 0:
        doc = doc.rstrip("\n") + "\n\n" + text
    else:
        nxt = doc.find("\n## ", start + len(SECTION))
        rest = doc[nxt + 1 :] if nxt >= 0 else ""
        doc = doc[:start] + text.rstrip("\n") + ("\n\n" + rest if rest else "\n")
    DOCS.write_text(doc.rstrip("\n") + "\n")


def main() -> None:
    """Parse args, run, print the table (and optionally write it into the docs)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,2000000,5000000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--docs-only", action="store_true",
                        help="rewrite the docs section from the last results.json")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    OUT.mkdir(parents=True, exist_ok=True)
    if args.docs_only:
        rows = json.loads((OUT / "results.json").read_text())
        write_docs(section(rows, table(rows, args.repeats), args))
        return
    rows = bench(sizes, args.repeats)
    result = table(rows, args.repeats)
    print(result)
    (OUT / "results.json").write_text(json.dumps(rows, indent=2))
    if args.write_docs:
        write_docs(section(rows, result, args))


if __name__ == "__main__":
    main()
