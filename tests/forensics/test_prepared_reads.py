"""Per-file queries prepared once per reading thread, the file a parameter: a directory
of thousands of small pod logs spent half of each file's read in DuckDB's parser."""

from __future__ import annotations

from pathlib import Path

import pytest

from ridtrace.forensics.reading.connection import PreparedReads, connect
from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.forensics.reading.lean import lean_spans_sql
from ridtrace.forensics.reading.parallel import read_all
from ridtrace.forensics.reading.scan import source_sql
from ridtrace.forensics.reading.table import LogTable
from tests.forensics.helpers import rt_request


def _query(path: Path) -> str:
    return lean_spans_sql(source_sql(str(path), lean=True, window=None))


def test_one_prepared_text_reads_every_file_as_a_plain_query_does(tmp_path: Path) -> None:
    files = []
    for i in range(3):
        path = tmp_path / f"pod-{i}'s log.jsonl"  # a quote in the name, as literal() escapes
        path.write_text("\n".join(rt_request(f"{i + 1:016x}", f"r{i}", 0, 1 + i)) + "\n")
        files.append(path)
    con = connect()
    try:
        prepared = PreparedReads(con)
        for path in files:
            got = prepared.arrow(_query(path), str(path))
            want = con.sql(_query(path)).to_arrow_table()
            assert got.to_pylist() == want.to_pylist()
        assert len(prepared._names) == 1  # one text, three files
    finally:
        con.close()


def test_a_query_that_does_not_read_the_file_once_runs_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text("\n".join(rt_request("a" * 16, "r", 0, 1)) + "\n")
    con = connect()
    try:
        prepared = PreparedReads(con)
        sql = f"SELECT count(*) AS n FROM ({_query(path)}) UNION ALL SELECT 1"
        assert prepared.arrow(sql, str(tmp_path / "other.jsonl"))["n"].to_pylist() == [1, 1]
        assert prepared._names == {}
    finally:
        con.close()


def test_files_read_side_by_side_never_run_more_duckdb_threads_than_cpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each file's numbered scan runs on its reading thread; DuckDB workers on top of
    # those only crowded the cores (more page faults and system time, no less wall).
    import ridtrace.forensics.reading.connection as connection_module
    import ridtrace.forensics.reading.parallel as parallel_module

    for module in (parallel_module, connection_module):
        monkeypatch.setattr(module, "usable_cpus", lambda: 4)
    sources = []
    for i in range(2):
        path = tmp_path / f"pod-{i}.jsonl"
        path.write_text("\n".join(rt_request(f"{i + 1:016x}", f"r{i}", 0, 1)) + "\n")
        sources.append(path)

    def threads(table: LogTable, file_id: int) -> int:
        return int(table.con.sql("SELECT current_setting('threads')").fetchall()[0][0])

    got = read_all(expand_inputs([str(p) for p in sources]), threads, lean=True)
    # Two files on four CPUs: two reading threads, two DuckDB threads each at most.
    assert got.results == [2, 2]


def test_ctrl_c_delivered_to_another_thread_still_stops_the_wait_for_a_file() -> None:
    # The kernel may deliver Ctrl-C to any thread: to a reading thread blocked on a pipe
    # it did not wake the main thread's untimed wait, and analyze ignored it for good.
    import signal
    import threading
    from concurrent.futures import Future

    from ridtrace.forensics.reading.parallel import _result

    waiting = threading.Event()

    class Watched(Future[int]):
        def result(self, timeout: float | None = None) -> int:
            waiting.set()
            return super().result(timeout)

    never = Watched()

    def ctrl_c_to_this_thread() -> None:
        waiting.wait(30)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        if not stopped.wait(10):  # the main thread slept through it: end the wait
            slept.append(True)
            never.set_result(0)

    stopped = threading.Event()
    slept: list[bool] = []
    poke = threading.Thread(target=ctrl_c_to_this_thread)
    poke.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            _result(never)
    finally:
        stopped.set()
        poke.join()
    assert not slept, "the interrupt waited for the file"
