"""A follower's per-chunk query: prepared once, run on each chunk as it is staged."""

from __future__ import annotations

from pathlib import Path

from ridtrace.forensics.live.follow import Follower, FollowSettings
from ridtrace.forensics.reading.connection import PreparedReads, connect
from tests.forensics.helpers import rt_request


def test_a_query_run_again_is_prepared_once_and_reads_the_file_as_it_is_now(
    tmp_path: Path,
) -> None:
    con = connect()
    queries = PreparedReads(con)
    staged = tmp_path / "chunk.jsonl"
    sql = (f"SELECT count(*) AS n, sum(a) AS total FROM read_json('{staged}', "
           "format = 'newline_delimited', columns = {a: 'INTEGER'})")
    staged.write_text('{"a": 1}\n')
    assert queries.arrow(sql, str(staged)).to_pylist() == [{"n": 1, "total": 1}]
    staged.write_text('{"a": 2}\n{"a": 5}\n')
    assert queries.arrow(sql, str(staged)).to_pylist() == [{"n": 2, "total": 7}]
    assert con.sql("SELECT count(*) FROM duckdb_prepared_statements()").fetchall() == [(1,)]


def test_a_follower_prepares_its_chunk_query_once(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(rt_request("a", "1", 0, 1)) + "\n")
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True))
    try:
        follower.start()
        follower.poll()
        with log.open("a") as out:
            out.write("\n".join(rt_request("b", "2", 2, 3)) + "\n")
        follower.poll()
        assert follower.rules.spans_seen == 2
        prepared = follower._con.sql("SELECT count(*) FROM duckdb_prepared_statements()")
        assert prepared.fetchall() == [(1,)]
    finally:
        follower.close()
