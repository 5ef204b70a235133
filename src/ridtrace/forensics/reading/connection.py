"""DuckDB connections for reading logs, and per-file queries prepared once per cursor."""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Sequence
from typing import Any

import duckdb
import pyarrow as pa

from ridtrace.forensics.reading.sql import literal


def connect() -> duckdb.DuckDBPyConnection:
    """A connection to a database of its own, set up for reading logs: UTC times, no
    progress bar, and as many threads as the CPUs this process may run on. For a caller
    that changes the database's settings (its threads); others take `shared_cursor`."""
    con = duckdb.connect()
    # GLOBAL: a cursor (one per reading thread) does not inherit a session's time zone,
    # and took a time without an offset in the machine's (TZ), not as UTC.
    con.execute("SET GLOBAL TimeZone = 'UTC'")
    con.execute("SET enable_progress_bar = false")
    con.execute(f"SET threads = {usable_cpus()}")
    return con


_shared: duckdb.DuckDBPyConnection | None = None
_shared_lock = threading.Lock()


def shared_cursor() -> duckdb.DuckDBPyConnection:
    """A connection (close it after use) to the process's one database set up as
    `connect`'s, whose settings no caller changes.

    DuckDB builds a new database's catalog for each `duckdb.connect()`, 40–60 ms of
    CPU, which the span query of every view (`trace`, `export`, `audit`) and every
    group of blocks the Dask engine reads paid again; a cursor costs microseconds.
    What a cursor registers is its own, so threads may each hold one.
    """
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = connect()
        database = _shared
    cursor = database.cursor()
    cursor.execute("SET enable_progress_bar = false")
    return cursor


def usable_cpus() -> int:
    """CPUs this process may run on: its affinity (taskset, a container's cpuset).

    DuckDB starts one thread per CPU of the machine; a process pinned to fewer CPUs
    (a follower given one core, a container) would time-slice its own threads.
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity API on this platform
        return max(1, os.cpu_count() or 1)


class PreparedReads:
    """Per-file queries prepared once on a cursor, the file a parameter.

    A file's query differs from the next file's only by its path, and DuckDB's parser
    took about half of a small file's 12 ms read (a directory of thousands of small
    pod logs). Prepared with the path as ``$path``, each file costs its bind and its run.
    A cursor runs one query at a time: one of these per reading thread.
    """

    # Texts prepared at most (lean, full, a window each): any more run unprepared.
    MAX_PREPARED = 8

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con
        self._names: dict[str, str] = {}

    def arrow(self, sql: str, path: str, ends: Sequence[int] | None = None) -> pa.Table:
        """`sql` (which reads `path` once, through ``read_json``) as an Arrow table.

        `ends`: the value of its ``$ends`` parameter (a batch of small files, `scan`).
        """
        marker = f"read_json({literal(path)}, "
        if sql.count(marker) != 1:
            return run_sql(self._con, sql, ends)
        text = sql.replace(marker, "read_json($path, ")
        name = self._names.get(text)
        if name is None:
            if len(self._names) >= self.MAX_PREPARED:
                return run_sql(self._con, sql, ends)
            name = f"ridtrace_read_{len(self._names)}"
            self._con.execute(f"PREPARE {name} AS {text}")
            self._names[text] = name
        values = f"path := {literal(path)}"
        if ends is not None:
            values += f", ends := {_int_list(ends)}"
        # Through a relation: its parse and bind of this short text cost ~4 ms, and its
        # Arrow result is no copy, where `execute`'s is one more of a big file's spans.
        return self._con.sql(f"EXECUTE {name}({values})").to_arrow_table()


def run_sql(
    con: duckdb.DuckDBPyConnection, sql: str, ends: Sequence[int] | None = None,
) -> pa.Table:
    """`sql` as an Arrow table, its ``$ends`` parameter `ends` when given."""
    if ends is None:
        return arrow_table(con, sql)
    return arrow_table(con, sql, {"ends": [int(end) for end in ends]})


# `execute` hands its rows to Arrow through one copy more than a relation does, and DuckDB
# warns of that on every call. Priced on the incident's frontend file (116k span rows, 32
# MiB): the same time and the same peak. The warning is ours alone to silence: only for
# calls made here.
warnings.filterwarnings(
    "ignore", message="Arrow output on a DB-API result", category=UserWarning,
    module=__name__.replace(".", r"\."),
)


def arrow_table(
    con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | None = None,
) -> pa.Table:
    """`sql`'s rows as an Arrow table, run once.

    Not `con.sql(sql).to_arrow_table()`: DuckDB's relation parses the statement, finds its
    parameters with a tokenizer written in Python and binds it, then parses and binds it
    again to run it. For the reading queries (28k characters) that was 60 ms of a small
    file's query against 38 ms, and about a sixth of the CPU of a test run that reads
    many small inputs (the Dask engine's blocks, rescued lines).
    """
    con.execute(sql, params)
    return con.to_arrow_table()


def _int_list(values: Sequence[int]) -> str:
    # An empty list's type is not known from its text alone.
    return f"[{', '.join(str(int(v)) for v in values)}]::BIGINT[]"
