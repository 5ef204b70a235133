"""`ridtrace analyze` end to end against DuckDB's equivalent query on the same files (issue 13).

Data sets (generated once, cached under ``benchmarks/out/forensics/``, gitignored):

* ``dynamo-incident``: ~1M Dynamo-format lines (frontend + three workers, ~500 MB) from
  `ridtrace.testing.dynamo`: ~2,000 colliding ids (a duplicate in flight and an
  Unlinked error each), ~1,000 more Unlinked errors, ~12,000 deprecated-header WARNs,
  a banner line at the top of every file and torn lines inside;
* ``dynamo-clean``: the same size and shape with no collision and no Unlinked error,
  so the two rows show whether cost follows the findings;
* ``ridtrace-5M``: ~5M lines of ridtrace's own schema (`ridtrace.testing.synth`,
  engine noise on), a handful of each fault;
* ``dynamo-pods`` (only with ``--sets``): ~100k Dynamo-format lines in 500 small files,
  125 small deployments of a frontend and three workers each, with their faults.

Contenders, run as subprocesses, interleaved in rounds (the order rotates per round):

* ``analyze``: ``ridtrace analyze DIR --format json -q -o FILE`` (all five checks);
* ``duckdb``: DuckDB reading the same files with ``read_json`` and answering what the
  issue's anchor answers: duplicate-in-flight ids (spans → frontend requests →
  overlapping clusters), Unlinked ids and the deprecated-header count.

* ``floor``: only the scan under analyze's read: DuckDB numbering and extracting the
  columns analyze reads (`reading.scan.LEAN_FIELDS`), one file per cursor, two at a
  time, as `reading.parallel.read_all` does, and nothing else — no per-span pick, line
  check, rule or report. What analyze would cost if all of those were free.

Wall time, CPU time (user + system) and peak RSS of each child (``os.wait4``); medians
and the ratio analyze / DuckDB per round (min…max); peak RSS as the median and the
largest of the rounds. Answers are checked against the
generator's truth. ``--readers`` adds the reader comparison (DuckDB, polars, pyarrow
reading the same 20 columns in process).

``--baseline SRC`` adds another checkout's ``analyze`` (``git archive REV src | tar -x
-C /tmp/base``, then ``--baseline /tmp/base/src``) to every round, for a before/after
ratio measured in the same minutes: this machine's speed drifts by ~10 % between hours.

Usage: ``.venv/bin/python benchmarks/bench_forensics.py [--rounds 3] [--sets a,b]
[--readers] [--baseline SRC]`` (``--readers`` needs polars: ``pip install 'ridtrace[bench]'``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out" / "forensics"
PYTHON = sys.executable
RIDTRACE = str(Path(PYTHON).parent / "ridtrace")

DUCKDB_DYNAMO = r"""
import sys, time, duckdb
files = sys.argv[1:]
con = duckdb.connect()
con.execute('SET enable_progress_bar = false')
query = '''
with l as (select * from read_json($files, format='newline_delimited', ignore_errors=true,
    columns={time:'VARCHAR', message:'VARCHAR', request_id:'VARCHAR', span_id:'VARCHAR',
             span_name:'VARCHAR', error:'VARCHAR', header:'VARCHAR'})),
r as (select span_id, first(request_id) rid, min(time::timestamptz) s, max(time::timestamptz) e
      from l where span_name = 'http-request' group by span_id),
o as (select *, max(e) over (partition by rid order by s, span_id
        rows between unbounded preceding and 1 preceding) pe from r),
c as (select *, sum(case when pe is null or s >= pe then 1 else 0 end) over (
        partition by rid order by s, span_id rows unbounded preceding) cl from o)
select (select count(*) from (select rid, cl from c group by rid, cl having count(*) > 1)),
       (select count(distinct span_id) from l where error like 'Unlinked%'),
       (select count(*) from l where header is not null)
'''
print(*con.execute(query, {"files": files}).fetchone())
"""

DUCKDB_RIDTRACE = r"""
import sys, time, duckdb
files = sys.argv[1:]
con = duckdb.connect()
con.execute('SET enable_progress_bar = false')
query = '''
with l as (select * from read_json($files, format='newline_delimited', ignore_errors=true,
    columns={time:'VARCHAR', request_id:'VARCHAR', trace_id:'VARCHAR', span_id:'VARCHAR',
             event:'VARCHAR', message:'VARCHAR', deprecated_headers:'VARCHAR'})),
r as (select trace_id, span_id, arg_max(request_id, time) rid, min(time::timestamptz) s,
         max(time::timestamptz) e, bool_or(coalesce(event like 'worker.%', false)) w
      from l where span_id is not null group by trace_id, span_id),
f as (select * from r where not w and rid is not null),
o as (select *, max(e) over (partition by rid order by s, span_id
        rows between unbounded preceding and 1 preceding) pe from f),
c as (select *, sum(case when pe is null or s >= pe then 1 else 0 end) over (
        partition by rid order by s, span_id rows unbounded preceding) cl from o)
select (select count(*) from (select rid, cl from c group by rid, cl having count(*) > 1)),
       (select count(distinct span_id) from l where event = 'response.unlinked'),
       (select count(*) from l where deprecated_headers is not null)
'''
print(*con.execute(query, {"files": files}).fetchone())
"""


FLOOR = r"""
import os, sys, duckdb
from concurrent.futures import ThreadPoolExecutor
fields, files = sys.argv[1].split(","), sys.argv[2:]
cpus = len(os.sched_getaffinity(0))  # as analyze's connect() sets it
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
con.execute(f"SET threads = {cpus}")
columns = "{" + ", ".join(f"'{f}': 'VARCHAR'" for f in fields) + "}"
# Every column extracted, none kept; quoted, as a field may hold a dot (time.duration_us).
counts = ", ".join(f'count("{f}")' for f in fields)

def scan(path):
    cur = con.cursor()
    literal = "'" + path.replace("'", "''") + "'"
    return cur.execute(
        f"SELECT count(*), max(rn), {counts} FROM (SELECT row_number() OVER () AS rn, * "
        f"FROM read_json({literal}, format = 'newline_delimited', ignore_errors = true, "
        f"columns = {columns}))").fetchone()[0]

files.sort(key=os.path.getsize, reverse=True)
with ThreadPoolExecutor(min(2, cpus)) as pool:
    print(sum(pool.map(scan, files)))
"""


def _dynamo(duplicates: int, cancelled: int) -> Callable[[Path], dict[str, Any]]:
    def make(target: Path) -> dict[str, Any]:
        from ridtrace.testing.dynamo import DynamoSpec, dynamo_requests_for_lines, write_dynamo_logs

        spec = DynamoSpec(
            requests=dynamo_requests_for_lines(1_000_000), seed=13, rate_per_s=600.0,
            duplicates=duplicates, cancelled=cancelled, deprecated_every=10,
        )
        truth = write_dynamo_logs(target, spec)
        return {"lines": truth.lines, "bad_lines": truth.bad_lines,
                "files": [str(p) for p in truth.files], "expected": _counts(truth.expected)}

    return make


def _ridtrace(lines: int) -> Callable[[Path], dict[str, Any]]:
    def make(target: Path) -> dict[str, Any]:
        from ridtrace.testing.synth import SynthSpec, requests_for_lines, write_logs

        spec = SynthSpec(
            requests=requests_for_lines(lines, engine_noise=True), seed=lines % 1000,
            rate_per_s=1500.0, crossed=5, collisions=5, duplicates=5, client_reuse=5,
            deprecated_every=200, engine_noise=True,
        )
        truth = write_logs(target, spec)
        return {"lines": truth.lines, "bad_lines": 0,
                "files": [str(p) for p in truth.files], "expected": _counts(truth.expected)}

    return make


def _dynamo_pods(lines: int, pods: int) -> Callable[[Path], dict[str, Any]]:
    """`pods` small Dynamo deployments (a frontend and three workers each, their own
    seed), `lines` lines in all: one directory of many small pod logs."""
    def make(target: Path) -> dict[str, Any]:
        from ridtrace.testing.dynamo import DynamoSpec, dynamo_requests_for_lines, write_dynamo_logs

        target.mkdir(parents=True)
        info: dict[str, Any] = {"lines": 0, "bad_lines": 0, "files": []}
        expected: set[tuple[str, str]] = set()
        for pod in range(pods):
            # A banner per file and no torn line: bad lines stay under 1 % of a small file.
            spec = DynamoSpec(requests=dynamo_requests_for_lines(lines // pods), seed=100 + pod,
                              duplicates=2, cancelled=1, deprecated_every=10, bad_lines=0)
            truth = write_dynamo_logs(target / f"pod-{pod:04d}", spec)
            for log in truth.files:
                flat = target / f"pod-{pod:04d}-{log.name}"
                log.rename(flat)
                info["files"].append(str(flat))
            (target / f"pod-{pod:04d}").rmdir()
            info["lines"] += truth.lines
            info["bad_lines"] += truth.bad_lines
            # The pods' colliding ids are the same text (``retry-N``): one finding each.
            expected |= truth.expected
        return info | {"expected": _counts(expected)}

    return make


def _counts(expected: set[tuple[str, str]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for kind, _ in expected:
        counts[kind] = counts.get(kind, 0) + 1
    return counts


SETS: dict[str, tuple[Callable[[Path], dict[str, Any]], str]] = {
    "dynamo-incident": (_dynamo(2000, 1000), DUCKDB_DYNAMO),
    "dynamo-clean": (_dynamo(0, 0), DUCKDB_DYNAMO),
    "ridtrace-5M": (_ridtrace(5_000_000), DUCKDB_RIDTRACE),
    # Not in the default run (the targets are the three above): ``--sets dynamo-pods``.
    "dynamo-pods": (_dynamo_pods(100_000, 125), DUCKDB_DYNAMO),
}
DEFAULT_SETS = ("dynamo-incident", "dynamo-clean", "ridtrace-5M")


def generate(name: str) -> tuple[Path, dict[str, Any]]:
    """The data set `name`, generated once (in a child process) and cached with its truth.

    Not generated in this process: a child's peak RSS (`os.wait4`) starts from its
    parent's at fork, and generating the incident took this process to ~1 GiB, which
    every contender's peak then read as its own.
    """
    target = OUT / name
    meta = target / "truth.json"
    if not meta.exists():
        subprocess.run([PYTHON, __file__, "--generate-only", name], check=True)
    return target, json.loads(meta.read_text())


def _generate_here(name: str) -> None:
    """Write the data set `name` and its truth (run as `--generate-only NAME`)."""
    target = OUT / name
    meta = target / "truth.json"
    t0 = time.perf_counter()
    info = SETS[name][0](target / "logs")
    info["bytes"] = sum(Path(p).stat().st_size for p in info["files"])
    info["generate_s"] = round(time.perf_counter() - t0, 1)
    meta.write_text(json.dumps(info, indent=2))


def timed(argv: list[str], env: dict[str, str] | None = None
          ) -> tuple[float, float, float, str, int]:
    """Run `argv`; wall time, that child's CPU seconds and peak RSS (MiB) via os.wait4."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0, out.decode(), code


def _check_analyze(doc: dict[str, Any], info: dict[str, Any]) -> None:
    summary = doc["summary"]
    assert summary["lines"] == info["lines"], (summary["lines"], info["lines"])
    assert summary["bad_lines"] == info["bad_lines"], (summary["bad_lines"], info["bad_lines"])
    for kind in ("duplicate_in_flight", "unlinked", "deprecated_header", "crossed_stream"):
        assert summary[kind] == info["expected"].get(kind, 0), (kind, summary, info["expected"])


def _check_duckdb(out: str, info: dict[str, Any]) -> None:
    dup, _, _ = (int(x) for x in out.split())
    assert dup == info["expected"].get("duplicate_in_flight", 0), (out, info["expected"])


# `analyze` from another checkout's ``src`` (``--baseline``): the same CLI, run by this
# interpreter with that tree first on the path.
_BASELINE_CLI = "import sys; from ridtrace.cli.main import run; sys.argv[0] = 'ridtrace'; run()"


def _analyze_argv(target: Path, report: Path, baseline: str | None) -> list[str]:
    tail = ["analyze", str(target / "logs"), "--format", "json", "-q", "-o", str(report)]
    return [PYTHON, "-c", _BASELINE_CLI, *tail] if baseline else [RIDTRACE, *tail]


def _compile_sources(baseline: str | None) -> None:
    """Byte-compile the ridtrace sources the runs import, as an installed package is.

    An editable checkout under ``PYTHONDONTWRITEBYTECODE`` (set on this machine) has no
    ``.pyc`` files, so every run compiled the modules it imported again: ~0.05–0.1 CPU-s
    that neither an installed ridtrace nor the anchor (DuckDB's own compiled package) pays.
    """
    import ridtrace

    trees = [str(Path(ridtrace.__file__).parent)] + ([baseline] if baseline else [])
    subprocess.run([PYTHON, "-m", "compileall", "-q", *trees], check=True)


def bench(names: list[str], rounds: int, baseline: str | None = None) -> list[dict[str, Any]]:
    """Interleaved rounds over every set and contender; medians and per-round ratios.

    With `baseline` (another checkout's ``src``), its ``analyze`` runs in every round too,
    so a before/after comparison shares the machine's state of the moment.
    """
    data = {name: generate(name) for name in names}
    if names:
        _compile_sources(baseline)
    runs: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    loads: dict[str, list[float]] = {name: [] for name in names}
    for rnd in range(rounds):
        for name in names:
            target, info = data[name]
            order = ["analyze", "duckdb", "floor"] + (["baseline"] if baseline else [])
            order = order[rnd % len(order):] + order[:rnd % len(order)]
            for who in order:
                if who in ("analyze", "baseline"):
                    report = target / "report.json"
                    src = baseline if who == "baseline" else None
                    env = {**os.environ, "PYTHONPATH": src} if src else None
                    wall, cpu, rss, _, code = timed(_analyze_argv(target, report, src), env)
                    assert code in (0, 1), code
                    _check_analyze(json.loads(report.read_text()), info)
                elif who == "duckdb":
                    wall, cpu, rss, out, code = timed([PYTHON, "-c", SETS[name][1], *info["files"]])
                    assert code == 0, code
                    _check_duckdb(out, info)
                else:
                    from ridtrace.forensics.reading.scan import LEAN_FIELDS

                    argv = [PYTHON, "-c", FLOOR, ",".join(LEAN_FIELDS), *info["files"]]
                    wall, cpu, rss, out, code = timed(argv)
                    assert code == 0, code
                runs.setdefault((name, who), []).append((wall, cpu, rss))
                loads[name].append(os.getloadavg()[0])
                print(f"round {rnd} {name:<16} {who:<8} {wall:6.2f} s {cpu:6.2f} CPU-s "
                      f"{rss:7.0f} MiB load {loads[name][-1]:.1f}", flush=True)
    rows = []
    for name in names:
        _, info = data[name]
        a, d, f = runs[(name, "analyze")], runs[(name, "duckdb")], runs[(name, "floor")]
        wall_ratios = [x[0] / y[0] for x, y in zip(a, d, strict=True)]
        cpu_ratios = [x[1] / y[1] for x, y in zip(a, d, strict=True)]
        rows.append({
            "set": name, "lines": info["lines"], "input_mib": info["bytes"] / 2**20,
            "findings": sum(info["expected"].values()),
            "analyze_s": statistics.median(x[0] for x in a),
            "duckdb_s": statistics.median(x[0] for x in d),
            "analyze_cpu": statistics.median(x[1] for x in a),
            "duckdb_cpu": statistics.median(x[1] for x in d),
            "ratio": statistics.median(wall_ratios),
            "ratio_lo": min(wall_ratios), "ratio_hi": max(wall_ratios),
            "cpu_ratio": statistics.median(cpu_ratios),
            "analyze_mib": max(x[2] for x in a), "duckdb_mib": max(x[2] for x in d),
            # One round's peak depends on how two files' reads overlap: the median too.
            "analyze_mib_median": statistics.median(x[2] for x in a),
            "floor_s": statistics.median(x[0] for x in f),
            "floor_cpu": statistics.median(x[1] for x in f),
            "floor_ratio": statistics.median(x[0] / y[0] for x, y in zip(f, d, strict=True)),
            "load_lo": min(loads[name]), "load_hi": max(loads[name]),
        })
        if baseline:
            b = runs[(name, "baseline")]
            rows[-1].update({
                "baseline_s": statistics.median(x[0] for x in b),
                "baseline_cpu": statistics.median(x[1] for x in b),
                "baseline_mib": max(x[2] for x in b),
                "baseline_mib_median": statistics.median(x[2] for x in b),
                "vs_baseline": statistics.median(x[0] / y[0] for x, y in zip(a, b, strict=True)),
                "cpu_vs_baseline": statistics.median(
                    x[1] / y[1] for x, y in zip(a, b, strict=True)),
            })
    return rows


READERS = r"""
import sys, time, json, resource
files = sys.argv[2:]
who = sys.argv[1]
fields = ["time", "schema", "target", "event", "message", "request_id", "x_request_id",
          "trace_id", "span_id", "parent_span_id", "parent_id", "span_name", "status",
          "outcome", "fp_in", "fp_out", "deprecated_headers", "header", "error",
          "chunk_request_id"]
t0 = time.perf_counter()
rows = 0
if who == "duckdb":
    import duckdb
    con = duckdb.connect()
    cols = {f: "VARCHAR" for f in fields}
    rows = con.execute("select count(*), count(span_id), max(request_id) from read_json($f, "
                       "format='newline_delimited', ignore_errors=true, columns=$c)",
                       {"f": files, "c": cols}).fetchone()[0]
elif who == "polars":
    import polars as pl
    schema = {f: pl.String for f in fields}
    frame = pl.scan_ndjson(files, schema=schema, ignore_errors=True).select(
        pl.len(), pl.col("span_id").count(), pl.col("request_id").max()).collect()
    rows = frame.item(0, 0)
elif who == "datafusion":
    import pyarrow as pa
    from datafusion import SessionContext
    ctx = SessionContext()
    # DataFusion's reader stops at the first bad line too: the clean copies again.
    ctx.register_json("l", files[0].rsplit("/", 1)[0], file_extension=".jsonl",
                      schema=pa.schema([pa.field(f, pa.string()) for f in fields]))
    rows = ctx.sql("select count(*), count(span_id), max(request_id) from l"
                   ).collect()[0].column(0)[0].as_py()
elif who == "chdb":
    import chdb
    columns = ", ".join(f"{f} Nullable(String)" for f in fields)
    out = chdb.query(
        f"select count(), count(span_id), max(request_id) from file("
        f"'{files[0].rsplit('/', 1)[0]}/*.jsonl', 'JSONEachRow', '{columns}') "
        "SETTINGS input_format_skip_unknown_fields = 1", "CSV").bytes()
    rows = int(out.split(b",")[0])
else:
    import pyarrow as pa, pyarrow.json as pj
    schema = pa.schema([pa.field(f, pa.string()) for f in fields])
    opts = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore",
                           newlines_in_values=False)
    for f in files:
        # pyarrow.json stops at the first bad line: read the clean copies.
        rows += pj.read_json(f, parse_options=opts).num_rows
print(rows)
"""


def readers(rounds: int) -> list[dict[str, Any]]:
    """Each reader installed on the clean Dynamo set's lines (banner and torn lines removed)."""
    target, info = generate("dynamo-clean")
    clean_dir = target / "clean"
    if not clean_dir.exists():
        clean_dir.mkdir()
        for path in info["files"]:
            with open(path, "rb") as src, open(clean_dir / Path(path).name, "wb") as out:
                for line in src:
                    if line.startswith(b"{") and line.rstrip().endswith(b"}"):
                        out.write(line)
    files = sorted(str(p) for p in clean_dir.iterdir())
    got: dict[str, list[tuple[float, float]]] = {}
    for rnd in range(rounds):
        order = [w for w in ("duckdb", "polars", "pyarrow", "datafusion", "chdb")
                 if w in ("duckdb", "pyarrow") or importlib.util.find_spec(w)]
        order = order[rnd % len(order):] + order[:rnd % len(order)]
        for who in order:
            wall, cpu, _, out, code = timed([PYTHON, "-c", READERS, who, *files])
            if code != 0:
                print(f"{who}: failed ({code})", flush=True)
                continue
            got.setdefault(who, []).append((wall, cpu))
            print(f"readers round {rnd} {who:<8} {wall:6.2f} s {cpu:6.2f} CPU-s rows {out.strip()}",
                  flush=True)
    return [
        {"reader": who, "wall": statistics.median(w for w, _ in v),
         "cpu": statistics.median(c for _, c in v)}
        for who, v in got.items()
    ]


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown table of the medians."""
    head = (
        "| data set | lines | input | findings | analyze | DuckDB | analyze / DuckDB (min…max) "
        "| CPU-s analyze / DuckDB | analyze peak RSS (median; most) "
        "| peak / input (median; most) "
        "| floor (scan only) | floor / DuckDB | load |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    body = "".join(
        f"| {r['set']} | {r['lines']:,} | {r['input_mib']:,.0f} MiB | {r['findings']:,} "
        f"| {r['analyze_s']:.2f} s | {r['duckdb_s']:.2f} s "
        f"| **{r['ratio']:.2f}×** ({r['ratio_lo']:.2f}…{r['ratio_hi']:.2f}) "
        f"| {r['analyze_cpu']:.1f} / {r['duckdb_cpu']:.1f} = {r['cpu_ratio']:.2f}× "
        f"| {r['analyze_mib_median']:,.0f} ({r['analyze_mib']:,.0f}) MiB "
        f"| {r['analyze_mib_median'] / r['input_mib']:.2f}× "
        f"({r['analyze_mib'] / r['input_mib']:.2f}×) "
        f"| {r['floor_s']:.2f} s, {r['floor_cpu']:.1f} CPU-s | {r['floor_ratio']:.2f}× "
        f"| {r['load_lo']:.1f}–{r['load_hi']:.1f} |\n"
        for r in rows
    )
    return head + body


def baseline_table(rows: list[dict[str, Any]]) -> str:
    """Markdown table of this checkout's analyze against the baseline's, same rounds."""
    head = ("| data set | analyze | baseline | wall this / baseline | CPU-s this / baseline "
            "| peak RSS this / baseline (median; most) |\n|---|---:|---:|---:|---:|---:|\n")
    return head + "".join(
        f"| {r['set']} | {r['analyze_s']:.2f} s | {r['baseline_s']:.2f} s "
        f"| **{r['vs_baseline']:.2f}×** "
        f"| {r['analyze_cpu']:.2f} / {r['baseline_cpu']:.2f} = {r['cpu_vs_baseline']:.2f}× "
        f"| {r['analyze_mib_median']:,.0f} / {r['baseline_mib_median']:,.0f} MiB "
        f"({r['analyze_mib']:,.0f} / {r['baseline_mib']:,.0f}) |\n"
        for r in rows
    )


def readers_table(rows: list[dict[str, Any]]) -> str:
    """Markdown table of the reader comparison."""
    duck = next((r for r in rows if r["reader"] == "duckdb"), None)
    head = "| reader (same 20 columns, clean lines) | wall | CPU-s | wall / DuckDB |\n|---|---:|---:|---:|\n"
    return head + "".join(
        f"| {r['reader']} | {r['wall']:.2f} s | {r['cpu']:.1f} "
        f"| {r['wall'] / duck['wall']:.2f}× |\n" if duck else ""
        for r in rows
    )


def main() -> None:
    """Parse args, run, print the tables (and write the raw results next to the data)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(DEFAULT_SETS),
                        help=f"comma-separated, of {', '.join(SETS)}; empty for none")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--readers", action="store_true")
    parser.add_argument("--baseline", help="another checkout's src directory, run interleaved")
    parser.add_argument("--generate-only", choices=list(SETS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if args.generate_only:
        _generate_here(args.generate_only)
        return
    rows = bench([s for s in args.sets.split(",") if s], args.rounds, args.baseline)
    if rows:
        print(table(rows))
    if args.baseline:
        print(baseline_table(rows))
    results: dict[str, Any] = {"analyze": rows}
    if args.readers:
        got = readers(args.rounds)
        print(readers_table(got))
        results["readers"] = got
    (OUT / "results.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
