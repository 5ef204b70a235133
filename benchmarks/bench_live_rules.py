"""The live rules alone (issue 16): `span_rows` + `LiveRules.feed` per 1M lines, one core.

``ridtrace analyze --follow`` spends its CPU in four stages (see docs/performance.md,
*Live detection*); this measures the two that turn parsed chunks into findings, with the
read and the DuckDB pass taken out so their noise does not hide the rules' cost.

1. Capture (once, or with ``--recapture``): the real `Follower` reads ``--src`` from the
   start (``FollowSettings(from_start=True)``); every poll's `ChunkSpans` list and file
   marks — exactly what `span_rows` and `LiveRules.feed` receive — are pickled to
   ``benchmarks/out/live-rules/<src name>.pkl``, with the findings the follower printed.
2. Replay (``--rounds`` times): every poll's parts go through ``span_rows`` then
   ``LiveRules.feed`` in a fresh `LiveRules`, timed with ``time.process_time``, on one
   core (``sched_setaffinity``), after one untimed ``span_rows`` (a process's first
   Arrow-to-Python conversion imports pandas). Prints per round the CPU seconds, spans
   per CPU-second, the entries and Span/Cluster objects the window holds after the last
   batch (the memory bound: equal counts, equal state), the findings
   count and a hash of the findings (kind, span id, request id, time, detail, evidence,
   in order: equal hashes, identical findings), then the medians. ``--window-s 60``
   makes the window evict (the 1M-line set spans ~5 minutes of log time).

With ``--against REV`` the rounds alternate between this tree's code and REV's
(``git archive REV src`` unpacked to a temporary directory), each round in a fresh
subprocess with ``PYTHONPATH`` pointing at one of them, so load from other processes
falls on both alike; the table then has one line per contender and round, and the
medians and their ratio. The capture holds only names, Arrow tables and numpy arrays,
no rules objects, so both read the same input.

Usage: ``.venv/bin/python benchmarks/bench_live_rules.py [--src /tmp/follow-src]
[--rounds 5] [--window-s 600] [--against main] [--recapture]``. Make the source with
``ridtrace.testing.synth.write_logs(src, replace(SynthSpec(), requests=requests_for_lines(1_000_000),
crossed=20, collisions=20, duplicates=20))`` (what ``--make-src`` does when it is missing).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import inspect
import json
import os
import pickle
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

OUT = Path(__file__).parent / "out" / "live-rules"
REPO = Path(__file__).resolve().parent.parent
# One poll's input to the rules: its chunks as (file name, spans table, line numbers)
# and the file marks. Plain tuples, so a capture outlives changes to `ChunkSpans`.
# A poll's parts, and what else the follower gave `LiveRules.feed` (file marks, files
# behind, the wild-clock limit, the settle marks), by name.
Poll = tuple[list[tuple[str, Any, dict[str, Any]]], dict[str, Any]]


def _capture(src: Path, window_s: float) -> tuple[list[Poll], list[dict[str, Any]], int]:
    """Every poll's input to the rules, the follower's own findings, and the lines read."""
    import ridtrace.forensics.live.follow as follow_module
    from ridtrace.forensics.live.follow import Follower, FollowSettings

    follower = Follower([str(src)], FollowSettings(from_start=True, window_s=window_s))
    polls: list[Poll] = []
    found: list[dict[str, Any]] = []
    real_rows, real_feed = follow_module.span_rows, follower.rules.feed
    captured: list[list[Any]] = []

    def rows_spy(parts: list[Any]) -> Any:
        captured.append([(p.name, p.spans, p.lines) for p in parts])
        return real_rows(parts)

    def feed_spy(batch: Any, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        # By name, so a replay can leave out what an older LiveRules does not take.
        names = list(inspect.signature(real_feed).parameters)[:1 + len(args)]
        named = dict(zip(names, (batch, *args), strict=True), **kwargs)
        del named["batch"]
        polls.append((captured[-1], named))
        return real_feed(batch, *args, **kwargs)

    follow_module.span_rows = rows_spy  # type: ignore[assignment]
    follower.rules.feed = feed_spy  # type: ignore[method-assign]
    try:
        follower.start()
        while True:
            batch, more = follower.poll()
            found.extend(batch)
            if not more:
                break
        lines = follower.stats.lines
    finally:
        follow_module.span_rows = real_rows
        follower.close()
    return polls, found, lines


def _digest(found: list[dict[str, Any]]) -> str:
    keys = [(f["kind"], f["span_id"], f["request_id"], f["time"], f["detail"],
             [(e["file"], e["line"]) for e in f["evidence"]]) for f in found]
    return hashlib.sha256(json.dumps(keys).encode()).hexdigest()[:16]


def _round(store: Path, window_s: float) -> dict[str, Any]:
    """One pass over the capture with the `ridtrace` on sys.path: CPU-s per stage."""
    from ridtrace.forensics.live.parse import ChunkSpans, span_rows
    from ridtrace.forensics.live.rules import LiveRules

    with open(store, "rb") as fh:
        saved = pickle.load(fh)
    polls = [([ChunkSpans(*part) for part in parts], given) for parts, given in saved["polls"]]
    # Untimed: the first Arrow-to-Python conversion of a process imports pandas and
    # more (~0.4 CPU-s, once per follower, whichever code runs); the rounds measure the
    # steady state.
    span_rows(polls[0][0])
    rules = LiveRules(window_s=window_s)
    takes = inspect.signature(rules.feed).parameters
    found: list[dict[str, Any]] = []
    rows_cpu = feed_cpu = 0.0
    gc.collect()
    for parts, given in polls:
        c0 = time.process_time()
        batch = span_rows(parts)
        c1 = time.process_time()
        found.extend(rules.feed(batch, **{k: v for k, v in given.items() if k in takes}))
        feed_cpu += time.process_time() - c1
        rows_cpu += c1 - c0
    # What the window holds after the last batch: index entries and live state objects
    # (exact; an RSS difference would measure the allocator's arenas as much).
    live = Counter(type(o).__name__ for o in gc.get_objects())
    return {"rows": rows_cpu, "feed": feed_cpu, "spans": rules.spans_seen,
            "lines": saved["lines"], "findings": len(found), "digest": _digest(found),
            "held": rules.state.size(), "objects": live["Span"] + live["Cluster"]}


def _export(rev: str, into: Path) -> Path:
    """REV's `src` tree unpacked under `into` (what PYTHONPATH points at for REV)."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "src"],
                             capture_output=True, check=True).stdout
    tar_path = into / "src.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def _run_round(src_dir: Path, store: Path, window_s: float) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src_dir)}
    done = subprocess.run(
        [sys.executable, __file__, "--one-round", str(store), "--window-s", str(window_s)],
        capture_output=True, text=True, env=env, check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--src", type=Path, default=Path("/tmp/follow-src"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--window-s", type=float, default=600.0)
    parser.add_argument("--against", metavar="REV", help="interleave with REV's code")
    parser.add_argument("--recapture", action="store_true")
    parser.add_argument("--make-src", action="store_true",
                        help="write the 1M-line synthetic source when --src is missing")
    parser.add_argument("--one-round", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[-1]})
    if args.one_round is not None:
        print(json.dumps(_round(args.one_round, args.window_s)))
        return
    if not args.src.exists():
        if not args.make_src:
            raise SystemExit(f"{args.src} is missing (see --make-src)")
        from ridtrace.testing.synth import SynthSpec, requests_for_lines, write_logs

        write_logs(args.src, replace(SynthSpec(), requests=requests_for_lines(1_000_000),
                                     crossed=20, collisions=20, duplicates=20))
    store = OUT / f"{args.src.name}-w{int(args.window_s)}.pkl"
    if args.recapture or not store.exists():
        polls, followed, lines = _capture(args.src, args.window_s)
        OUT.mkdir(parents=True, exist_ok=True)
        with open(store, "wb") as fh:
            pickle.dump({"polls": polls, "findings": followed, "lines": lines}, fh,
                        protocol=pickle.HIGHEST_PROTOCOL)
        print(f"captured {len(polls)} polls, {lines:,} lines, {len(followed)} findings "
              f"(digest {_digest(followed)})")
    with tempfile.TemporaryDirectory(prefix="bench-live-rules-") as tmp:
        trees = {"this tree": REPO / "src"}
        if args.against:
            trees = {args.against: _export(args.against, Path(tmp)), **trees}
        print("| code | round | span_rows CPU-s | feed CPU-s | CPU-s per 1M lines "
              "| spans/CPU-s | entries held | Span+Cluster objects | findings | digest |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        per: dict[str, list[float]] = {name: [] for name in trees}
        rates: dict[str, list[float]] = {name: [] for name in trees}
        stages: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        for k in range(args.rounds):
            for name, tree in trees.items():
                r = _run_round(tree, store, args.window_s)
                per_m = 1e6 / r["lines"]
                cpu = r["rows"] + r["feed"]
                per[name].append(cpu * per_m)
                stages[name].append((r["rows"] * per_m, r["feed"] * per_m))
                rates[name].append(r["spans"] / cpu)
                print(f"| {name} | {k + 1} | {r['rows'] * per_m:.3f} | {r['feed'] * per_m:.3f} "
                      f"| {cpu * per_m:.3f} | {rates[name][-1]:,.0f} | {r['held']:,} "
                      f"| {r['objects']:,} "
                      f"| {r['findings']} "
                      f"| {r['digest']} |", flush=True)
        for name in trees:
            rows, feed = (statistics.median(x) for x in zip(*stages[name], strict=True))
            print(f"median {name}: {statistics.median(per[name]):.3f} CPU-s per 1M lines "
                  f"(span_rows {rows:.3f}, feed {feed:.3f}), "
                  f"{statistics.median(rates[name]):,.0f} spans/CPU-s")
        if args.against:
            ratio = statistics.median(per[args.against]) / statistics.median(per["this tree"])
            print(f"ratio {args.against} / this tree: {ratio:.2f}x")


if __name__ == "__main__":
    main()
