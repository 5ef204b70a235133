"""Run the forensics on a Dask cluster: same functions, same findings, bounded memory.

The pipeline, one pass over the input:

1. **per block** (a worker task, memory bounded by the block): read a newline-aligned
   byte range of one file → `parse_chunk` → `normalize` → `events_frame` →
   `build_requests` → partial requests (one row per span seen in the block), lines
   numbered from the block's start (`ridtrace.forensics.blocks`);
2. **line numbers**: the client gathers each block's line count (a few integers) and
   shifts every partial by the lines of the blocks before it in the same file;
3. **per request** (shuffle on a hash of ``(trace_id, span_id)``): every partial of a
   span lands in one partition, where `combine_requests` merges them
   (`ridtrace.forensics.partials`);
4. **rules**: the combined requests frame is collected and handed to
   `ridtrace.forensics.analysis.analyze_requests` — the very code the pandas engine runs.

The requests frame (one row per span, a few hundred bytes each) is the only thing held
whole, on the client; events never are.

Importing this module imports dask and distributed; the CLI imports it only for
``--engine dask``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import dask.dataframe as dd
import distributed
import pandas as pd

from ridtrace.forensics.analysis import Report, analyze_requests, select_window
from ridtrace.forensics.blocks import Block, BlockResult, empty_partial, plan_blocks, read_block
from ridtrace.forensics.partials import KEY, combine_requests, finish_requests
from ridtrace.forensics.reader import MAX_SAMPLES, BadLine, ReadStats
from ridtrace.forensics.urls import expand_urls

# A multiple of the reader's 16 MiB chunk, so blocks cut where the pandas engine does.
DEFAULT_BLOCK_BYTES = 64 << 20
_LINE_COLUMNS = ("first_line", "last_line", "unlinked_line", "foreign_line", "deprecated_line")
_BLOCKS_PER_SHUFFLE_PARTITION = 4
# What a local cluster gets on top of Dask's machine-sized defaults: quiet logs and a
# dashboard on a free port (8787 is often taken by another cluster on the machine).
LOCAL_CLUSTER_OPTIONS: dict[str, Any] = {"dashboard_address": ":0", "silence_logs": logging.ERROR}
# distributed's annotations are partial; the engine talks to it through `Any`.
_dist: Any = distributed
DaskClient = Any


class DaskEngineError(RuntimeError):
    """The cluster cannot be reached or created (the CLI exits 2)."""


@dataclass
class DaskLoad:
    """What the Dask engine collects: the requests frame and the read's counters."""

    requests: pd.DataFrame
    stats: ReadStats
    lines_in_window: int


@contextmanager
def dask_client(scheduler: str | None = None, **cluster_options: Any) -> Iterator[DaskClient]:
    """A client of the cluster at `scheduler`, or of a local cluster sized to the machine.

    A local cluster gets Dask's defaults (worker processes and threads from the CPU
    count, memory split evenly between workers) unless `cluster_options` say otherwise.
    """
    if scheduler is not None:
        try:
            client = _dist.Client(scheduler, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise DaskEngineError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from exc
        with client:
            yield client
        return
    options = {**LOCAL_CLUSTER_OPTIONS, **cluster_options}
    with _dist.LocalCluster(**options) as cluster, _dist.Client(cluster) as client:
        yield client


def _us(stamp: pd.Timestamp | None) -> int | None:
    return None if stamp is None else int(stamp.value // 1000)


def _counters(result: BlockResult) -> tuple[ReadStats, int, int]:
    return result.stats, result.lines, result.in_window


def _shift(result: BlockResult, offset: int) -> pd.DataFrame:
    """The block's partial with file-absolute line numbers."""
    partial = result.partial
    if offset:
        partial = partial.assign(**{col: partial[col] + offset for col in _LINE_COLUMNS})
    return partial


def _offsets(blocks: Sequence[Block], lines: Sequence[int]) -> list[int]:
    """Lines in the blocks before each block, within its file."""
    out: list[int] = []
    seen: dict[int, int] = {}
    for block, count in zip(blocks, lines, strict=True):
        before = seen.get(block.file_id, 0)
        out.append(before)
        seen[block.file_id] = before + count
    return out


def merge_stats(counters: Sequence[ReadStats], offsets: Sequence[int]) -> ReadStats:
    """Sum the blocks' counters; samples in block order, line numbers made absolute.

    Each block kept its first samples, so the first `MAX_SAMPLES` of the blocks in order
    are the first of the whole read. Line 0 (an unreadable file) stays 0.
    """
    total = ReadStats()
    for stats, offset in zip(counters, offsets, strict=True):
        total.lines += stats.lines
        total.bad_lines += stats.bad_lines
        total.files += stats.files
        total.skipped_files += stats.skipped_files
        for s in stats.samples:
            if len(total.samples) < MAX_SAMPLES:
                line = s.line + offset if s.line else 0
                total.samples.append(BadLine(s.file, line, s.reason))
    return total


def load_requests(
    client: DaskClient,
    inputs: Sequence[str],
    *,
    lean: bool = False,
    block_bytes: int = DEFAULT_BLOCK_BYTES,
    since: pd.Timestamp | None = None,
    until: pd.Timestamp | None = None,
) -> DaskLoad:
    """Read `inputs` (paths or fsspec URLs) on the cluster into one requests frame.

    The frame equals `build_requests` of the whole input (same rows, order and values)
    before the --since/--until window is applied.
    """
    files = expand_urls(inputs)
    names = [f.name for f in files]
    blocks = plan_blocks(files, block_bytes)
    meta = empty_partial(names)
    if not blocks:
        return DaskLoad(finish_requests(meta.drop(columns=KEY), names), ReadStats(), 0)
    shared = client.scatter(names, broadcast=True)
    results = client.map(
        read_block, blocks, names=shared, lean=lean, since_us=_us(since), until_us=_us(until),
        pure=False,
    )
    counters = client.gather(client.map(_counters, results, pure=False))
    offsets = _offsets(blocks, [c[1] for c in counters])
    parts = client.map(_shift, results, offsets, pure=False)
    del results  # the shifted partials are all the shuffle needs
    frame = dd.from_delayed(parts, meta=meta, verify_meta=False)
    npartitions = max(1, math.ceil(len(blocks) / _BLOCKS_PER_SHUFFLE_PARTITION))
    combined = frame.shuffle(KEY, npartitions=npartitions).map_partitions(
        combine_requests, meta=meta.drop(columns=KEY)
    )
    # Gathering the partitions and concatenating here is cheaper than Dask's own
    # final concatenation task, which first moves them all to one worker.
    pieces = client.gather(client.compute(combined.to_delayed()))
    requests = finish_requests(pd.concat(pieces, ignore_index=True), names)
    stats = merge_stats([c[0] for c in counters], offsets)
    return DaskLoad(requests, stats, sum(c[2] for c in counters))


def analyze_load(
    load: DaskLoad, *, since: pd.Timestamp | None = None, until: pd.Timestamp | None = None
) -> Report:
    """The rules over what `load_requests` collected, windowed as `analyze` windows."""
    windowed = since is not None or until is not None
    requests = select_window(load.requests, since, until)
    return analyze_requests(requests, load.stats, lines=load.lines_in_window if windowed else None)


def analyze_dask(
    client: DaskClient,
    inputs: Sequence[str],
    *,
    block_bytes: int = DEFAULT_BLOCK_BYTES,
    since: pd.Timestamp | None = None,
    until: pd.Timestamp | None = None,
) -> Report:
    """`ridtrace.forensics.analysis.analyze` on a Dask cluster: the same report."""
    load = load_requests(
        client, inputs, lean=True, block_bytes=block_bytes, since=since, until=until
    )
    return analyze_load(load, since=since, until=until)
