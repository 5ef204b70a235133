"""A log-writing process: replays log files into a directory at a steady rate.

``python -m tests.support.log_writer SRC DST [--rate N] [--rotate MODE] [--split-every K]``

Copies every file of SRC into DST a few lines at a time, in time order across files
(as running services write them), each file flushed after every step of lines, so a
follower sees the logs grow as running services write them — and, as with services,
one file may show a later time than another has flushed yet. Halfway through, each
file is rotated:

* ``rename``: renamed to ``NAME.1``, a fresh ``NAME`` created (logrotate's ``create``);
* ``copytruncate``: copied to ``NAME.1``, then truncated in place;
* ``rename-gzip``: renamed, then compressed to ``NAME.1.gz`` and the ``.1`` removed;
* ``copytruncate-gzip``: copied, truncated, then the copy compressed and removed.

With ``--split-every K`` every K-th line is written in two pieces with a pause longer
than a poll between them: a follower must hold the first piece until the rest arrives.
Prints ``done`` on stdout at the end.
"""

from __future__ import annotations

import argparse
import gzip
import heapq
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import BinaryIO

STEP_LINES = 50
_TIME = re.compile(rb'"time":"([^"]+)"')


def _time(line: bytes) -> bytes:
    found = _TIME.search(line)
    return found.group(1) if found else b""


def _rotate(path: Path, handle: BinaryIO, mode: str) -> BinaryIO:
    rotated = path.with_name(path.name + ".1")
    if mode.startswith("rename"):
        handle.close()
        os.rename(path, rotated)
        handle = open(path, "ab")  # noqa: SIM115 (the writer's handle for the rest)
    else:
        shutil.copyfile(path, rotated)
        os.truncate(path, 0)  # the handle appends (O_APPEND): next write lands at 0
    if mode.endswith("gzip"):
        with open(rotated, "rb") as src, gzip.open(str(rotated) + ".gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
        rotated.unlink()
    return handle


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("src", type=Path)
    parser.add_argument("dst", type=Path)
    parser.add_argument("--rate", type=float, default=5000.0, help="lines per second, all files")
    parser.add_argument("--rotate", default="none",
                        choices=["none", "rename", "copytruncate", "rename-gzip",
                                 "copytruncate-gzip"])
    parser.add_argument("--split-every", type=int, default=0)
    parser.add_argument("--pause", type=float, default=0.5)
    args = parser.parse_args(argv)
    sources = sorted(p for p in args.src.iterdir() if p.is_file())
    paths = [args.dst / p.name for p in sources]
    handles: list[BinaryIO] = [open(p, "ab") for p in paths]  # noqa: SIM115
    # Lines in time order across files, as running services write them.
    merged = list(heapq.merge(*(
        [(_time(line), k, line) for line in p.read_bytes().splitlines(keepends=True)]
        for k, p in enumerate(sources)
    )))
    counts = [0] * len(sources)
    total = len(merged)
    rotated = args.rotate == "none"
    started = time.monotonic()
    for start in range(0, total, STEP_LINES):
        for _, k, line in merged[start : start + STEP_LINES]:
            counts[k] += 1
            if args.split_every and counts[k] % args.split_every == 0:
                half = len(line) // 2
                handles[k].write(line[:half])
                handles[k].flush()
                time.sleep(args.pause)
                handles[k].write(line[half:])
            else:
                handles[k].write(line)
        for handle in handles:
            handle.flush()
        written = min(start + STEP_LINES, total)
        if not rotated and written >= total // 2:
            handles = [_rotate(p, h, args.rotate) for p, h in zip(paths, handles, strict=True)]
            rotated = True
        ahead = written / args.rate - (time.monotonic() - started)
        if ahead > 0:
            time.sleep(ahead)
    for handle in handles:
        handle.close()
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
