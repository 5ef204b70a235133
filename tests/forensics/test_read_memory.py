"""What keeps `analyze`'s peak down: DuckDB hands freed memory back during a large read,
and pandas frames are made only once the read's database is closed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

import ridtrace.forensics.reading.parallel as parallel
import ridtrace.forensics.records.read as records_read
from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.testing.synth import SynthSpec, write_logs


@pytest.fixture
def opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[duckdb.DuckDBPyConnection]:
    """The databases a read opens, a read of `tmp_path`'s logs taken as a large one."""
    write_logs(tmp_path, SynthSpec(requests=40, seed=3))
    databases: list[duckdb.DuckDBPyConnection] = []
    real_connect = parallel.connect

    def kept() -> duckdb.DuckDBPyConnection:
        databases.append(real_connect())
        return databases[-1]

    monkeypatch.setattr(parallel, "connect", kept)
    monkeypatch.setattr(parallel, "_SHARED_DATABASE_BYTES", 0)
    return databases


_THRESHOLD = "SELECT current_setting('allocator_bulk_deallocation_flush_threshold')"


def _is_open(con: duckdb.DuckDBPyConnection) -> bool:
    try:
        con.execute("SELECT 1").fetchall()
    except duckdb.ConnectionException:
        return False
    return True


@pytest.mark.parametrize("large", [True, False])
def test_a_read_of_large_files_hands_freed_memory_back(
    tmp_path: Path, opened: list[duckdb.DuckDBPyConnection], monkeypatch: pytest.MonkeyPatch,
    large: bool,
) -> None:
    # DuckDB's default keeps up to 512 MB of freed memory for later queries: a finished
    # file's hash tables stayed resident while the next file's grew. Many small files
    # keep it: handed back, each batch's buffers were faulted in anew for nothing.
    sources = expand_inputs([str(tmp_path)])
    largest = max(source.size for source in sources)
    monkeypatch.setattr(parallel, "_LARGE_FILE_BYTES", largest if large else largest + 1)
    settings: list[Any] = []

    def use(table: object, file_id: int) -> int:
        (database,) = opened
        settings.append(database.cursor().execute(_THRESHOLD).fetchone())
        return file_id

    read = parallel.read_all(sources, use, lean=True)
    # DuckDB prints a size its own way (1MB reads back as 976.5 KiB).
    with duckdb.connect() as scratch:
        default = scratch.execute(_THRESHOLD).fetchone()
        scratch.execute(
            f"SET allocator_bulk_deallocation_flush_threshold = '{parallel._FLUSH_FREED}'")
        flushed = scratch.execute(_THRESHOLD).fetchone()
    assert flushed != default and len(read.results) >= 2
    assert settings == [flushed if large else default] * len(read.results)
    assert not _is_open(opened[0])


def test_analyze_makes_its_frames_after_the_read_is_closed(
    tmp_path: Path, opened: list[duckdb.DuckDBPyConnection], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Made while another file's aggregate ran, pandas' copies of a finished file's spans
    # added to the read's peak.
    database_open: list[bool] = []
    real_partial = records_read.pieces_partial

    def partial(pieces: Any, **options: Any) -> Any:
        database_open.append(_is_open(opened[0]))
        return real_partial(pieces, **options)

    monkeypatch.setattr(records_read, "pieces_partial", partial)
    sources = expand_inputs([str(tmp_path)])
    loaded = records_read.read_partials(sources)
    # Small files are parsed many to a query: a frame per batch.
    assert len(sources) >= 2 and loaded.partials
    assert database_open == [False] * len(loaded.partials)
    assert sum(len(frame) for frame in loaded.partials) > 40


def test_analyze_keeps_duckdb_strings_and_dask_gets_shuffle_strings(tmp_path: Path) -> None:
    # The local read made pandas' 64-bit-offset strings for Dask's shuffle, and combining
    # cast every text column back: two copies of each, ~12k page faults on the incident.
    from ridtrace.forensics.records.partials import ARROW_STRING, SHUFFLE_STRING, is_text

    write_logs(tmp_path, SynthSpec(requests=40, seed=3))
    sources = expand_inputs([str(tmp_path)])
    local = records_read.read_partials(sources).partials
    text = {t for frame in local for t in frame.dtypes if is_text(t)}
    assert text == {ARROW_STRING}
    read = parallel.read_all(sources, lambda table, file_id: records_read.span_piece(
        table, file_id), lean=True)
    shuffled = records_read.pieces_partial(read.results)
    assert {t for t in shuffled.dtypes if is_text(t)} == {SHUFFLE_STRING}
