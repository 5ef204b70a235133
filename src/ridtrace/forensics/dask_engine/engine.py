"""Run the forensics on a Dask cluster: same functions, same findings, bounded memory.

The pipeline, one pass over the input:

1. **per block** (a worker task, memory bounded by the block): a newline-aligned byte
   range of one file is staged, numbered and read by DuckDB through the local engine's
   stages (`ridtrace.forensics.reading`) into partial requests (one row per span seen
   in the block), lines numbered from the block's start
   (`ridtrace.forensics.dask_engine.blocks`);
2. **per request** (shuffle on a hash of ``(trace_id, span_id)``, one output partition
   per block): partials stream into Dask's disk-backed p2p shuffle as blocks finish;
   every partial of a span lands in one partition, where `combine_requests` merges
   them (`ridtrace.forensics.records.partials`); the client fetches each combined partition as
   it finishes and the worker frees it at once;
3. **line numbers**: evidence lines travel as (block, line in block); the client,
   which by then has every block's line count, turns them into lines of the file;
4. **rules**: the combined requests frame is collected and handed to
   `ridtrace.forensics.rules.report.analyze_requests` — the very code the local engine runs.

The requests frame (one row per span, a few hundred bytes each) is the only thing held
whole, on the client; events never are. A worker holds about one block's work at a
time, whatever the size of the input.

Importing this module imports dask and distributed; the CLI imports it only for
``--engine dask``.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import CancelledError
from dataclasses import dataclass, field, replace
from typing import Any

import dask.dataframe as dd
import distributed
import pandas as pd
from dask.delayed import delayed

from ridtrace.forensics.dask_engine.blocks import (
    Block,
    LogFile,
    empty_partial,
    name_unseen,
    plan_blocks,
)

# Re-exported: `dask_client` and the local cluster's options are part of the engine's
# documented API (docs/scale-out.md).
from ridtrace.forensics.dask_engine.cluster import LOCAL_CLUSTER_OPTIONS as LOCAL_CLUSTER_OPTIONS
from ridtrace.forensics.dask_engine.cluster import DaskClient, shuffle_failure
from ridtrace.forensics.dask_engine.cluster import DaskEngineError as DaskEngineError
from ridtrace.forensics.dask_engine.cluster import dask_client as dask_client
from ridtrace.forensics.dask_engine.collect import (
    DEFAULT_NO_WORKERS_TIMEOUT,
    NoWorkersError,
    fetch_each,
)
from ridtrace.forensics.dask_engine.groups import GroupResult, group_blocks, read_blocks
from ridtrace.forensics.dask_engine.urls import expand_urls
from ridtrace.forensics.reading.inputs import Inputs
from ridtrace.forensics.reading.stats import MAX_SAMPLES, BadLine, ReadStats
from ridtrace.forensics.reading.unkeyed import in_whole_file
from ridtrace.forensics.records.finished import finish_requests
from ridtrace.forensics.records.partials import KEY, combine_requests
from ridtrace.forensics.rules.report import Report, analyze_requests
from ridtrace.forensics.rules.window import window_requests

# Bytes of log per block: each is staged, parsed and aggregated like a whole file.
DEFAULT_BLOCK_BYTES = 64 << 20
# distributed's annotations are partial; the engine talks to it through `Any`.
_dist: Any = distributed


@dataclass
class DaskLoad:
    """What the Dask engine collects: the requests frame and the read's counters."""

    requests: pd.DataFrame
    stats: ReadStats
    lines_in_window: int
    # The files planned for reading (`urls.expand_urls`), each as its workers open it.
    files: list[LogFile] = field(default_factory=list)


def _us(stamp: pd.Timestamp | None) -> int | None:
    return None if stamp is None else int(stamp.value // 1000)


def _counters(result: GroupResult) -> list[tuple[ReadStats, int, int]]:
    return result.counters


def _partial(result: GroupResult) -> pd.DataFrame:
    return result.partial


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
        # A copy: the block's counters may be the cluster's own object (threads).
        total.merge_counts(replace(stats, unreadable_files=in_whole_file(
            stats.unreadable_files, offset, total.unreadable_files)))
        for s in stats.samples:
            if len(total.samples) < MAX_SAMPLES:
                line = s.line + offset if s.line else 0
                total.samples.append(BadLine(s.file, line, s.reason))
    return total


def load_requests(
    client: DaskClient,
    inputs: Inputs,
    *,
    lean: bool = False,
    block_bytes: int = DEFAULT_BLOCK_BYTES,
    since: pd.Timestamp | None = None,
    until: pd.Timestamp | None = None,
    no_workers_timeout: float = DEFAULT_NO_WORKERS_TIMEOUT,
) -> DaskLoad:
    """Read `inputs` (paths or fsspec URLs) on the cluster into one requests frame.

    The frame equals `build_requests` of the whole input (same rows, order and values)
    before the --since/--until window is applied. A cluster with no worker for
    `no_workers_timeout` seconds while work is left raises `DaskEngineError`.
    """
    files = expand_urls(inputs)
    names = [f.name for f in files]
    blocks = plan_blocks(files, block_bytes)
    # A lean read's partials have no view columns: Dask's shuffle builds its partitions
    # from the meta's columns.
    meta = empty_partial(names, lean=lean)
    if not blocks:
        return DaskLoad(finish_requests(meta.drop(columns=KEY), names), ReadStats(), 0, files)
    # One graph: each block's result feeds its counters (tiny, gathered) and its
    # partial, which Dask's shuffle consumes and releases as soon as the block is read.
    shared = delayed(names, traverse=False)
    since_us, until_us = _us(since), _us(until)
    reads = [
        delayed(read_blocks, pure=False)(
            group, shared, lean=lean, since_us=since_us, until_us=until_us
        )
        for group in group_blocks(blocks, block_bytes)
    ]
    frame = dd.from_delayed([delayed(_partial)(r) for r in reads], meta=meta,
                            verify_meta=False)
    combined = frame.shuffle(KEY, npartitions=shuffle_outputs(blocks, block_bytes)).map_partitions(
        combine_requests, meta=meta.drop(columns=KEY)
    )
    # One compute, so each block is read once for both its counters and its partial.
    pieces = combined.to_delayed()
    futures = client.compute([*pieces, *(delayed(_counters)(r) for r in reads)])
    try:
        results = fetch_each(client, futures, no_workers_timeout=no_workers_timeout)
    except NoWorkersError as exc:
        # Dask would hold the tasks until a worker joins: forever, for a command.
        if exc.paused:
            raise DaskEngineError(
                f"every Dask worker ({exc.paused}) was paused for memory for "
                f"{exc.seconds:g}s, so no report was made (give each worker more memory, "
                "or read smaller parts with --partition-size)") from exc
        raise DaskEngineError(
            f"no Dask worker for {exc.seconds:g}s at the scheduler, so no report was made "
            "(were the workers killed, or never started? start one with `dask worker "
            "SCHEDULER_ADDRESS`, or wait longer with --no-workers-timeout)") from exc
    except _dist.KilledWorker as exc:
        # The cluster's failure, not ridtrace's (a worker over its memory limit, a node
        # lost): no report, since the work it held would be missing from it.
        raise DaskEngineError(
            f"a Dask worker died while reading the logs, so no report was made: {exc} "
            "(over its memory limit? try a smaller --partition-size or more memory "
            "per worker)") from exc
    except RuntimeError as exc:
        failure = shuffle_failure(exc)
        if failure is None:
            raise
        raise failure from exc
    except CancelledError as exc:
        # distributed cancels every future of a client whose scheduler went away (its
        # host down, restarted): as an unreachable scheduler at the start, exit 2.
        raise DaskEngineError(
            f"lost the Dask scheduler, or it cancelled the work, while reading the logs, "
            f"so no report was made: {exc}") from exc
    # Concatenated here: Dask's own final concatenation task first moves every
    # partition to one worker.
    combined_frame = pd.concat(results[: len(pieces)], ignore_index=True)
    counters = [c for group in results[len(pieces) :] for c in group]
    offsets = _offsets(blocks, [c[1] for c in counters])
    requests = finish_requests(combined_frame, names, offsets)
    stats = merge_stats([c[0] for c in counters], offsets)
    name_unseen(stats, files)
    return DaskLoad(requests, stats, sum(c[2] for c in counters), files)


def shuffle_outputs(blocks: Sequence[Block], block_bytes: int) -> int:
    """How many partitions the shuffle writes: one per block's worth of input.

    Each then holds about one block's partials, so unpacking and combining it needs
    less than reading a block did (four blocks per output raised the workers' peak by
    ~100 MiB at 64 MiB blocks, for no speed-up). Counted in bytes, not blocks: a
    directory of 500 small pod logs is 500 blocks of a few kilobytes, and 500 outputs
    made 250,000 shuffle shards, minutes of work for 47 MiB.
    """
    total = sum(min(block.file.size, block_bytes) for block in blocks)
    return max(1, min(len(blocks), -(-total // block_bytes)))


def analyze_load(
    load: DaskLoad, *, since: pd.Timestamp | None = None, until: pd.Timestamp | None = None
) -> Report:
    """The rules over what `load_requests` collected, windowed as `analyze` windows."""
    windowed = since is not None or until is not None
    window = window_requests(load.requests, since, until)
    return analyze_requests(window.requests, load.stats,
                            lines=load.lines_in_window if windowed else None,
                            read_spans=len(load.requests), offsets=window.offsets,
                            with_outputs=window.with_outputs)


def analyze_dask(
    client: DaskClient,
    inputs: Sequence[str],
    *,
    block_bytes: int = DEFAULT_BLOCK_BYTES,
    since: pd.Timestamp | None = None,
    until: pd.Timestamp | None = None,
    no_workers_timeout: float = DEFAULT_NO_WORKERS_TIMEOUT,
) -> Report:
    """`ridtrace.forensics.rules.report.analyze` on a Dask cluster: the same report."""
    load = load_requests(client, inputs, lean=True, block_bytes=block_bytes, since=since,
                         until=until, no_workers_timeout=no_workers_timeout)
    return analyze_load(load, since=since, until=until)
