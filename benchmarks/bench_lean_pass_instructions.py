"""The lean per-span pass's cost per log line in CPU instructions, under callgrind (issue 13).

`bench_forensics.py` times `ridtrace analyze` end to end; on a shared 2-core machine its
ratios move by ±10 % between runs, more than a change to one SQL term is worth.
Instructions do not depend on the neighbours: callgrind counts them exactly. This runs
DuckDB's lean pass (`reading.scan.source_sql` + `reading.lean.lean_spans_sql`, one
thread, Arrow out, as `LogTable.spans` runs it) over the first N lines of a log, and
over its first line alone; the difference over N - 1 is the per-line count. Start-up,
imports and DuckDB's planning (~20 ms per file) cancel out. The rows are counted, so a
baseline that reads differently shows.

``--baseline SRC`` (``git archive REV src | tar -x -C /tmp/base``, then ``--baseline
/tmp/base/src``) runs another checkout's pass on the same slices. Each run takes ~30 s
under callgrind.

Usage: ``.venv/bin/python benchmarks/bench_lean_pass_instructions.py [--lines 60000]
[--baseline SRC] LOG [LOG ...]`` (e.g. the files of ``benchmarks/out/forensics/
dynamo-incident/logs``, made by ``bench_forensics.py``); prints markdown.
Needs valgrind (``apt-get install -y valgrind``).
"""

from __future__ import annotations

import argparse
import itertools
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_COLLECTED = re.compile(r"Collected : (\d+)")

PASS = r"""
import sys
sys.path.insert(0, sys.argv[1])
import duckdb
from ridtrace.forensics.reading.lean import lean_spans_sql
from ridtrace.forensics.reading.scan import source_sql
con = duckdb.connect()
con.execute("SET threads = 1")
con.execute("SET enable_progress_bar = false")
sql = lean_spans_sql(source_sql(sys.argv[2], lean=True, window=None))
print(con.sql(sql).to_arrow_table().num_rows)
"""


def instructions(src: Path, log: Path) -> tuple[int, int]:
    """(instructions, span rows) of one lean pass over `log` with `src`'s ridtrace."""
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/cg",
             sys.executable, "-c", PASS, str(src), str(log)],
            capture_output=True, text=True, check=True,
        )
    found = _COLLECTED.search(done.stderr)
    assert found is not None, done.stderr[-2000:]
    return int(found.group(1)), int(done.stdout.split()[-1])


def head(log: Path, lines: int, into: Path) -> Path:
    """The first `lines` lines of `log`, as a file in `into`."""
    target = into / f"{lines}-{log.name}"
    with log.open("rb") as source, target.open("wb") as sink:
        sink.writelines(itertools.islice(source, lines))
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+", type=Path)
    parser.add_argument("--lines", type=int, default=60_000)
    parser.add_argument("--baseline", type=Path, help="another checkout's src/")
    args = parser.parse_args()
    sources = {"this": ROOT / "src"}
    if args.baseline:
        sources["baseline"] = args.baseline
    print("| log | lines | " + " | ".join(f"{name}: instr/line (span rows)" for name in sources)
          + (" | this / baseline |" if args.baseline else " |"))
    print("|---|---:|" + "---:|" * (len(sources) + bool(args.baseline)))
    with tempfile.TemporaryDirectory() as tmp:
        for log in args.logs:
            one, many = head(log, 1, Path(tmp)), head(log, args.lines, Path(tmp))
            per_line: dict[str, float] = {}
            cells = []
            for name, src in sources.items():
                fixed, _ = instructions(src, one)
                total, rows = instructions(src, many)
                per_line[name] = (total - fixed) / (args.lines - 1)
                cells.append(f"{per_line[name]:,.0f} ({rows:,})")
            ratio = (f" {per_line['this'] / per_line['baseline']:.3f}× |" if args.baseline
                     else "")
            print(f"| {log.name} | {args.lines:,} | " + " | ".join(cells) + f" |{ratio}")


if __name__ == "__main__":
    main()
