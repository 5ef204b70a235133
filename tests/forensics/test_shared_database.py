"""The views' span query and the Dask engine's groups read on cursors of one database."""

from __future__ import annotations

import uuid

import pyarrow as pa

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

