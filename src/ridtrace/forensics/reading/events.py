"""Load log inputs into one normalised events DataFrame (one row per valid line)."""

from __future__ import annotations

import threading
import zlib
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import pandas as pd
import pyarrow as pa

from ridtrace.forensics.reading.evidence import EvidenceParser, parse_evidence
from ridtrace.forensics.reading.inputs import Source, expand_inputs, looks_like_log, open_source
from ridtrace.forensics.reading.normalize import normalize
from ridtrace.forensics.reading.reader import (
    MAX_SAMPLES,
    ReadStats,
    iter_chunks,
    new_parser,
    parse_chunk,
)
from ridtrace.forensics.reading.schema import EVENT_CATEGORY_COLUMNS, EVENT_COLUMNS, TIME_TYPE


@dataclass
class LoadedLogs:
    """The events frame of a read plus its counters (lines, bad lines, samples)."""

    events: pd.DataFrame
    stats: ReadStats
    files: list[str]
    # A lean read keeps only evidence lines in `events`; these are the times (epoch µs)
    # of the other valid lines, so that windows still count every line.
    other_times: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))


def other_lines_in_window(
    logs: LoadedLogs, since: pd.Timestamp | None, until: pd.Timestamp | None
) -> int:
    """Lines a lean read left out of `events` whose time is in [since, until)."""
    return count_in_window(logs.other_times, since, until)


def count_in_window(
    times_us: np.ndarray, since: pd.Timestamp | None, until: pd.Timestamp | None
) -> int:
    """How many epoch-µs times fall in [since, until)."""
    keep = np.ones(len(times_us), dtype=bool)
    if since is not None:
        keep &= times_us >= since.value // 1000
    if until is not None:
        keep &= times_us < until.value // 1000
    return int(keep.sum())


def _empty_table() -> pa.Table:
    fields = []
    for col in EVENT_COLUMNS:
        if col == "file":
            typ: pa.DataType = pa.int32()
        elif col == "line":
            typ = pa.int64()
        elif col == "time":
            typ = TIME_TYPE
        elif col in EVENT_CATEGORY_COLUMNS:
            typ = pa.dictionary(pa.int32(), pa.string())
        else:
            typ = pa.string()
        fields.append(pa.field(col, typ))
    return pa.schema(fields).empty_table()


def _arrow_strings(typ: pa.DataType) -> pd.ArrowDtype | None:
    return pd.ArrowDtype(typ) if typ == pa.string() else None


def events_frame(table: pa.Table, files: Sequence[str]) -> pd.DataFrame:
    """Arrow events table → pandas: ids as Arrow strings, the rest categorical/numpy."""
    df = table.to_pandas(types_mapper=_arrow_strings, self_destruct=True)
    codes = np.asarray(df["file"].to_numpy(), dtype=np.int32)
    df["file"] = pd.Categorical.from_codes(codes, categories=pd.Index(list(files), dtype=object))
    for col in EVENT_CATEGORY_COLUMNS:
        if not isinstance(df[col].dtype, pd.CategoricalDtype):
            df[col] = df[col].astype("category")
    return cast(pd.DataFrame, df)


def _read_one(
    src: Source,
    file_id: int,
    stats: ReadStats,
    pieces: list[pa.Table],
    on_bytes: Callable[[int], None] | None,
    lean: bool,
    other_times: list[np.ndarray] | None = None,
) -> None:
    stream, raw = open_source(src)
    position = 0

    def progress(_: int) -> None:
        # Report on-disk bytes (not decompressed ones) so a .gz never exceeds 100 %.
        nonlocal position
        if on_bytes is None:
            return
        try:
            now = raw.tell()
        except OSError:
            return
        on_bytes(now - position)
        position = now

    try:
        if src.from_directory and not looks_like_log(stream):
            stats.skipped_files.append(src.name)
            return
        stats.files += 1
        if lean and other_times is not None:
            _read_evidence(iter_chunks(stream, progress), file_id, src.name, stats, pieces,
                           other_times)
            return
        parser = new_parser(lean=lean)
        for chunk, first_line, count in iter_chunks(stream, progress):
            for table, lines in parse_chunk(parser, chunk, first_line, count, stats, src.name):
                pieces.append(normalize(table, lines, file_id, stats, src.name))
    except (OSError, EOFError, zlib.error) as exc:
        # A corrupt or truncated .gz: keep what was read, report the file, go on.
        stats.bad(src.name, 0, f"unreadable: {exc}")
    finally:
        if src.path is not None:
            raw.close()


_IN_FLIGHT = 3


def _read_evidence(
    chunks: Iterator[tuple[bytes, int, int]],
    file_id: int,
    name: str,
    stats: ReadStats,
    pieces: list[pa.Table],
    other_times: list[np.ndarray],
) -> None:
    """Parse chunks on two threads (Arrow releases the GIL), merged back in file order."""
    local = threading.local()

    def work(chunk: bytes, first_line: int) -> tuple[ReadStats, list[pa.Table], np.ndarray]:
        parser = getattr(local, "parser", None)
        if parser is None:
            parser = local.parser = EvidenceParser()
        mine = ReadStats()
        found, times = parse_evidence(parser, chunk, first_line, mine, name)
        return mine, [normalize(t, lines, file_id, mine, name) for t, lines in found], times

    def merge(job: Future[tuple[ReadStats, list[pa.Table], np.ndarray]]) -> None:
        mine, tables, times = job.result()
        stats.lines += mine.lines
        stats.bad_lines += mine.bad_lines
        room = MAX_SAMPLES - len(stats.samples)
        stats.samples.extend(mine.samples[: max(room, 0)])
        pieces.extend(tables)
        other_times.append(times)

    pending: deque[Future[tuple[ReadStats, list[pa.Table], np.ndarray]]] = deque()
    with ThreadPoolExecutor(max_workers=2) as pool:
        try:
            for chunk, first_line, _ in chunks:
                pending.append(pool.submit(work, chunk, first_line))
                while len(pending) >= _IN_FLIGHT:
                    merge(pending.popleft())
        finally:  # an unreadable .gz stops the reading, not what was read before it
            while pending:
                merge(pending.popleft())


def read_sources(
    sources: Sequence[Source],
    *,
    on_bytes: Callable[[int], None] | None = None,
    lean: bool = False,
) -> LoadedLogs:
    """Read and normalise every source; bad lines are counted, never fatal.

    ``lean=True`` is what `ridtrace.forensics.rules.report.analyze` needs and no more:
    display-only fields (level, client, route, …) stay null, and `events` holds only
    the evidence lines (lifecycle events, fingerprints, deprecated headers, unlinked
    errors; see `ridtrace.forensics.reading.reader.parse_evidence`). The other lines are still
    counted and checked, and their times kept in `LoadedLogs.other_times`.
    """
    stats = ReadStats()
    pieces: list[pa.Table] = []
    other: list[np.ndarray] = []
    names = [src.name for src in sources]
    for file_id, src in enumerate(sources):
        _read_one(src, file_id, stats, pieces, on_bytes, lean, other)
    table = pa.concat_tables(pieces) if pieces else _empty_table()
    del pieces
    times = np.concatenate(other) if other else np.empty(0, dtype=np.int64)
    return LoadedLogs(
        events=events_frame(table, names), stats=stats, files=names, other_times=times
    )


def load_events(
    inputs: Sequence[str],
    *,
    on_bytes: Callable[[int], None] | None = None,
    lean: bool = False,
) -> LoadedLogs:
    """Expand PATH arguments (files, dirs, globs, ``-``) and load them.

    Raises `ridtrace.forensics.reading.inputs.ForensicsInputError` for a missing path.
    """
    return read_sources(expand_inputs(inputs), on_bytes=on_bytes, lean=lean)
