"""`ridtrace export jaeger` end to end, this tree against another checkout's, on the same logs.

Data sets (generated once by a child process, cached under ``benchmarks/out/export/``,
gitignored):

* ``ridtrace-300k``: ~300k lines of ridtrace's own schema (`ridtrace.testing.synth`): a
  frontend and two workers, a few of each fault, deprecated headers every 50 requests;
* ``dynamo-300k``: ~300k Dynamo-format lines (`ridtrace.testing.dynamo`): a frontend
  and three workers, colliding ids and Unlinked errors, banner and torn lines.

Contenders, each a fresh process, interleaved per round (the order alternates):

* ``this``: ``ridtrace export jaeger DIR -o FILE`` from this tree;
* ``baseline`` (with ``--baseline SRC``): the same command from another checkout's
  ``src`` (``git archive REV src | tar -x -C /tmp/base``, then ``--baseline /tmp/base/src``).

Wall time, CPU seconds and peak RSS of each child (``os.wait4``); medians, and the ratio
this / baseline per round (min…max). Every round checks that both trees wrote the same
bytes: the export is the same document, only its cost may change.

Usage: ``.venv/bin/python benchmarks/bench_export.py [--rounds 3] [--baseline SRC]``
"""

from __future__ import annotations

import argparse
import filecmp
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out" / "export"
PYTHON = sys.executable
THIS_TREE = str(ROOT / "src")

# Generated in a child: a child's peak RSS starts from its parent's at fork, so a parent
# that had built 300k lines in memory made every contender look as big as it was.
GENERATORS = {
    "ridtrace-300k": """
from pathlib import Path
import sys
from ridtrace.testing.synth import SynthSpec, requests_for_lines, write_logs
spec = SynthSpec(requests=requests_for_lines(300_000), seed=7, rate_per_s=800.0, crossed=5,
                 collisions=5, duplicates=5, client_reuse=5, deprecated_every=50)
write_logs(Path(sys.argv[1]), spec)
""",
    "dynamo-300k": """
from pathlib import Path
import sys
from ridtrace.testing.dynamo import DynamoSpec, dynamo_requests_for_lines, write_dynamo_logs
spec = DynamoSpec(requests=dynamo_requests_for_lines(300_000), seed=13, rate_per_s=600.0,
                  duplicates=200, cancelled=100, deprecated_every=10)
write_dynamo_logs(Path(sys.argv[1]), spec)
""",
}
_CLI = "import sys; from ridtrace.cli.main import run; sys.argv[0] = 'ridtrace'; run()"


def logs_of(name: str) -> Path:
    logs = OUT / name / "logs"
    if not logs.is_dir():
        logs.mkdir(parents=True)
        print(f"generating {name} …", file=sys.stderr)
        subprocess.run([PYTHON, "-c", GENERATORS[name], str(logs)], check=True,
                       env={**os.environ, "PYTHONPATH": THIS_TREE})
    return logs


def export(src: str, logs: Path, out: Path) -> tuple[float, float, float]:
    """Wall, CPU seconds and peak RSS (MiB) of one ``export jaeger`` run from `src`."""
    argv = [PYTHON, "-c", _CLI, "export", "jaeger", str(logs), "-o", str(out)]
    started = time.perf_counter()
    child = subprocess.Popen(argv, env={**os.environ, "PYTHONPATH": src},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    assert code in (0, 3), f"export jaeger from {src} exited {code}"
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sets", default=",".join(GENERATORS))
    parser.add_argument("--baseline", help="another checkout's src directory")
    args = parser.parse_args()
    trees = {"this": THIS_TREE} | ({"baseline": args.baseline} if args.baseline else {})
    for tree in trees.values():
        subprocess.run([PYTHON, "-m", "compileall", "-q", tree], check=True)
    print("| data set | lines | input | tree | wall | CPU-s | peak RSS | wall this / baseline "
          "(min…max) |\n|---|---:|---:|---|---:|---:|---:|---:|")
    for name in args.sets.split(","):
        logs = logs_of(name)
        files = sorted(logs.iterdir())
        size = sum(f.stat().st_size for f in files) / 2**20
        lines = sum(f.read_bytes().count(b"\n") for f in files)
        runs: dict[str, list[tuple[float, float, float]]] = {tree: [] for tree in trees}
        for round_ in range(args.rounds):
            order = list(trees) if round_ % 2 == 0 else list(reversed(trees))
            for tree in order:
                runs[tree].append(export(trees[tree], logs, OUT / name / f"{tree}.json"))
                wall, cpu, rss = runs[tree][-1]
                print(f"round {round_} {name} {tree:8} {wall:6.2f} s {cpu:6.2f} CPU-s "
                      f"{rss:6.0f} MiB", file=sys.stderr)
            if "baseline" in trees:
                assert filecmp.cmp(OUT / name / "this.json", OUT / name / "baseline.json",
                                   shallow=False), f"{name}: the two trees wrote different files"
        for tree in trees:
            wall, cpu, rss = (statistics.median(r[i] for r in runs[tree]) for i in range(3))
            ratio = ""
            if tree == "this" and "baseline" in trees:
                each = [t[0] / b[0] for t, b in zip(runs["this"], runs["baseline"], strict=True)]
                ratio = (f"**{statistics.median(each):.2f}×** "
                         f"({min(each):.2f}…{max(each):.2f})")
            print(f"| {name} | {lines:,} | {size:,.0f} MiB | {tree} | {wall:.2f} s | {cpu:.2f} | "
                  f"{rss:,.0f} MiB | {ratio} |")


if __name__ == "__main__":
    main()
