"""Replay generated logs into a directory as services write them, each file flushed with
its own lag, and follow them in-process with a clock the replay moves.

One seed decides everything: the logs (`ridtrace.testing.synth`, with the real legacy
policy's minted ids at ``request.start`` half the time, or `ridtrace.testing.dynamo`
with skewed workers), each file's flush lag (below the settle time), lines written in
two pieces, a rotation of each file at its own time (rename, its writer reopening late,
or copy-and-truncate), how much a poll reads, and when polls happen (some taking longer
than the settle time, as under a backlog). `replay` returns the error findings printed
live and those `analyze` reports for the final files.
"""

from __future__ import annotations

import os
import random
import re
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

from ridtrace.forensics.live.follow import Follower, FollowSettings
from ridtrace.forensics.reading.events import load_events
from ridtrace.forensics.rules.report import analyze, report_json
from ridtrace.testing.dynamo import DynamoSpec, write_dynamo_logs
from ridtrace.testing.synth import SynthSpec, write_logs

Key = tuple[str, str, str]
_TIME = re.compile(r'"time":"([^"]+)"')
_LOST_OUTPUT = "that no caller received"  # judged by the batch `analyze` only
_MINTED = re.compile(r'"event":"request.start","request_id":"(\d+)"')


def key(finding: dict[str, Any]) -> Key:
    return (str(finding["kind"]), str(finding["span_id"]), str(finding["request_id"]))


def batch_errors(directory: Path) -> list[Key]:
    """The error findings `analyze` reports for `directory` (as live prints them)."""
    doc = report_json(analyze(load_events([str(directory)], lean=True)))
    return sorted(key(f) for f in doc["findings"]
                  if f["severity"] == "error" and not str(f["detail"]).endswith(_LOST_OUTPUT))


def follow_copies(folder: Path, data: Path, names: list[str], last_time: float, *,
                  lag_s: float = 0.0) -> list[dict[str, Any]]:
    """Follow `folder` from the start while `data`'s files are copied into it one by
    one, `lag_s` of the follow's clock apart (a poll after each), then to the end; the
    findings printed. The wall clock reads `last_time` (epoch s, the logs' end) 100 s
    after the follow's clock starts."""
    for name in names:
        (folder / name).write_text("")
    ticks = Ticks()
    follower = Follower([str(folder)], FollowSettings(from_start=True, settle_s=1.0),
                        ticks=ticks, clock=lambda: last_time + ticks.now - 100.0)
    live: list[dict[str, Any]] = []
    try:
        follower.start()
        for name in names:
            shutil.copyfile(data / name, folder / name)
            ticks.now += lag_s
            live.extend(follower.poll()[0])
        ticks.now += 5.0
        live.extend(follower.poll()[0])
        follower.run(lambda finding: live.append(finding) or True, stop=lambda: True)
    finally:
        follower.close()
    return live


class Ticks:
    """A monotonic clock the replay moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _generate(src: Path, rng: random.Random, kind: str) -> None:
    seed = rng.randrange(10**6)
    if kind == "synth":
        write_logs(src, SynthSpec(requests=rng.choice([60, 150, 300]), seed=seed,
                                  workers=rng.choice([1, 2, 3]),
                                  rate_per_s=rng.choice([50.0, 200.0, 400.0, 1000.0]),
                                  crossed=rng.randrange(4), collisions=rng.randrange(4),
                                  duplicates=rng.randrange(4), client_reuse=1,
                                  engine_noise=rng.random() < 0.3))
        if rng.random() < 0.5:  # the real legacy policy: request.start logs a minted id
            front = src / "frontend.jsonl"
            out = []
            for line in front.read_text().splitlines(keepends=True):
                found = _MINTED.search(line)
                if found:
                    minted = f"{rng.getrandbits(64):016x}-mint"
                    line = line.replace(f'"request_id":"{found.group(1)}"',
                                        f'"request_id":"{minted}"', 1)
                out.append(line)
            front.write_text("".join(out))
    else:
        skew = tuple(rng.choice([0, 0, -20_000, 30_000]) for _ in range(3)) \
            if rng.random() < 0.3 else ()
        write_dynamo_logs(src, DynamoSpec(requests=rng.choice([60, 150, 300]), seed=seed,
                                          rate_per_s=rng.choice([100.0, 400.0, 800.0]),
                                          duplicates=rng.randrange(1, 5),
                                          cancelled=rng.randrange(3), worker_skew_us=skew))


def _seconds(line: str) -> float | None:
    found = _TIME.search(line)
    if not found:
        return None
    try:
        return datetime.fromisoformat(found.group(1).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _writes(files: list[Path], rng: random.Random,
            settle: float) -> tuple[list[tuple[float, int, str]], float]:
    """(tick, file, text) of every write in tick order (each file's own order kept), and
    the log time of tick 100."""
    plans = []
    for path in files:
        lines = path.read_text().splitlines(keepends=True)
        times = [_seconds(line) for line in lines]
        later = None
        for i in range(len(times) - 1, -1, -1):  # a banner: the time of the next line
            if times[i] is None:
                times[i] = later
            else:
                later = times[i]
        plans.append((lines, times))
    t0 = min(t for _, times in plans for t in times if t is not None)
    maxlag = rng.choice([0.0, 0.2, 0.5, 0.9]) * settle
    writes = []
    for k, (lines, times) in enumerate(plans):
        lag_k = rng.random() * maxlag
        flushed = 0.0
        for text, t in zip(lines, times, strict=True):
            lag = (min(maxlag, lag_k + rng.random() * (maxlag - lag_k))
                   if rng.random() < 0.5 else lag_k)
            at = max(flushed, (t or t0) - t0 + 100.0 + lag)
            flushed = at
            if rng.random() < 0.03 and len(text) > 4:  # a line written in two pieces
                half = len(text) // 2
                writes.append((at, k, text[:half]))
                flushed = at + rng.random() * max(maxlag - lag, 0.0)
                writes.append((flushed, k, text[half:]))
            else:
                writes.append((at, k, text))
    writes.sort(key=lambda w: w[0])  # stable: each file's order is kept
    return writes, t0


def replay(work: Path, seed: int, kind: str, settle: float = 1.0) -> tuple[list[Key], list[Key]]:
    """(printed live, in print order; `analyze` of the final files, sorted)."""
    rng = random.Random(seed)
    src, dst = work / "src", work / "dst"
    _generate(src, rng, kind)
    dst.mkdir()
    files = sorted(src.iterdir())
    writes, t0 = _writes(files, rng, settle)
    rotate_at = rng.choice([None, None, writes[len(writes) // 2][0]])
    mode = rng.choice(["rename", "copytruncate"])
    ticks = Ticks()
    max_bytes = rng.choice([32 << 20, 32 << 20, 16 << 10, 4 << 10])
    follower = Follower([str(dst)], FollowSettings(from_start=True, settle_s=settle,
                                                   max_bytes=max_bytes),
                        ticks=ticks, clock=lambda: t0 + ticks.now - 100.0)
    live: list[Key] = []
    handles: dict[int, Any] = {}
    rotated: dict[int, float] = {}
    reopen: dict[int, float] = {}
    offsets = [rng.random() * 0.3 for _ in files]
    try:
        follower.start()
        i, tick = 0, 100.0 - rng.random()
        end = writes[-1][0] + 3 * settle + 1
        more, slow = False, rng.random() < 0.3
        while tick < end or more:
            if more:  # a poll under load takes time; the writers go on meanwhile
                tick += rng.choice([0.01, 0.3, 1.5]) if slow else 0.01
            else:
                tick += rng.choice([0.05, 0.1, 0.25, 0.25, 0.4, 0.7])
            while i < len(writes) and writes[i][0] <= tick:
                at, k, text = writes[i]
                path = dst / files[k].name
                if k not in handles:
                    handles[k] = open(path, "a")  # noqa: SIM115 (the writer's handle)
                handles[k].write(text)
                handles[k].flush()
                i += 1
                if rotate_at is not None and k not in rotated and at >= rotate_at + offsets[k]:
                    rotated[k] = at
                    if mode == "rename":  # the writer goes on in the renamed file a while
                        path.rename(path.with_name(path.name + ".1"))
                        reopen[k] = at + rng.choice([0.0, 0.05, 0.3])
                    else:
                        shutil.copyfile(path, path.with_name(path.name + ".1"))
                        os.truncate(path, 0)
                if k in reopen and at >= reopen[k]:
                    del reopen[k]
                    handles[k].close()
                    handles[k] = open(path, "a")  # noqa: SIM115
            ticks.now = tick
            found, more = follower.poll()
            live.extend(map(key, found))
        for handle in handles.values():
            handle.close()
        follower.run(lambda f: live.append(key(f)) is None, stop=lambda: True)
    finally:
        follower.close()
    return live, batch_errors(dst)
