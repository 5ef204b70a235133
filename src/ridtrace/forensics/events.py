"""Load log inputs into one normalised events DataFrame (one row per valid line)."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import pandas as pd
import pyarrow as pa

from ridtrace.forensics.normalize import normalize
from ridtrace.forensics.reader import ReadStats, iter_chunks, new_parser, parse_chunk
from ridtrace.forensics.schema import EVENT_CATEGORY_COLUMNS, EVENT_COLUMNS, TIME_TYPE
from ridtrace.forensics.sources import Source, expand_inputs, looks_like_log, open_source


@dataclass
class LoadedLogs:
    """The events frame of a read plus its counters (lines, bad lines, samples)."""

    events: pd.DataFrame
    stats: ReadStats
    files: list[str]


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


def read_sources(
    sources: Sequence[Source],
    *,
    on_bytes: Callable[[int], None] | None = None,
    lean: bool = False,
) -> LoadedLogs:
    """Read and normalise every source; bad lines are counted, never fatal.

    ``lean=True`` skips display-only fields (level, client, route, …) for speed; the
    findings of `ridtrace.forensics.analysis.analyze` do not need them.
    """
    stats = ReadStats()
    pieces: list[pa.Table] = []
    names = [src.name for src in sources]
    for file_id, src in enumerate(sources):
        _read_one(src, file_id, stats, pieces, on_bytes, lean)
    table = pa.concat_tables(pieces) if pieces else _empty_table()
    del pieces
    return LoadedLogs(events=events_frame(table, names), stats=stats, files=names)


def load_events(
    inputs: Sequence[str],
    *,
    on_bytes: Callable[[int], None] | None = None,
    lean: bool = False,
) -> LoadedLogs:
    """Expand PATH arguments (files, dirs, globs, ``-``) and load them.

    Raises `ridtrace.forensics.sources.ForensicsInputError` for a missing path.
    """
    return read_sources(expand_inputs(inputs), on_bytes=on_bytes, lean=lean)
