"""Small reads, the views' span query and the Dask engine's groups: cursors of one
DuckDB database per process, not a database each."""

from __future__ import annotations

import uuid
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pytest

from ridtrace.forensics.reading.connection import shared_cursor, usable_cpus


def test_shared_cursors_are_one_database_set_up_for_logs() -> None:
    # Each view (trace, export, audit) and each group of a Dask read opened a database
    # of its own: DuckDB builds its catalog anew for each, 40-60 ms of CPU.
    table = f"ridtrace_probe_{uuid.uuid4().hex}"
    first, second = shared_cursor(), shared_cursor()
    try:
        first.execute(f"CREATE TABLE {table} AS SELECT 1 AS x")
        assert second.sql(f"SELECT x FROM {table}").fetchall() == [(1,)]
        settings = second.sql(
            "SELECT current_setting('TimeZone'), current_setting('threads'),"
            " current_setting('enable_progress_bar')").fetchall()
        assert settings == [("UTC", usable_cpus(), False)]
    finally:
        first.execute(f"DROP TABLE IF EXISTS {table}")
        first.close()
        second.close()


def test_what_a_cursor_registers_is_its_own() -> None:
    # Two views built at once on two threads register the same name.
    first, second = shared_cursor(), shared_cursor()
    try:
        first.register("ridtrace_events", pa.table({"x": [1, 2]}))
        second.register("ridtrace_events", pa.table({"x": [10]}))
        assert first.sql("SELECT sum(x) FROM ridtrace_events").fetchall() == [(3,)]
        assert second.sql("SELECT sum(x) FROM ridtrace_events").fetchall() == [(10,)]
    finally:
        first.close()
        second.close()


def test_a_small_read_opens_no_database_and_a_large_one_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every analyze of a few pods' logs paid 40-60 ms for a database of its own; a large
    # read keeps one, closed after it, so DuckDB's memory is freed before the rules run.
    import ridtrace.forensics.reading.parallel as parallel
    from ridtrace.forensics.reading.events import load_events
    from ridtrace.testing.synth import SynthSpec, write_logs

    write_logs(tmp_path, SynthSpec(requests=20, seed=1))
    opened: list[object] = []
    real_connect = parallel.connect

    def counted() -> duckdb.DuckDBPyConnection:
        opened.append(object())
        return real_connect()

    monkeypatch.setattr(parallel, "connect", counted)
    small = load_events([str(tmp_path)])
    assert opened == [] and len(small.events) > 0
    monkeypatch.setattr(parallel, "_SHARED_DATABASE_BYTES", 0)
    large = load_events([str(tmp_path)])
    assert len(opened) == 1
    pd.testing.assert_frame_equal(large.events, small.events)
