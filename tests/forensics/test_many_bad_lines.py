"""A log of mostly text (an access log in the log folder): its bad lines cost little.

The lean pass lists a file's suspect lines in one row (`lean.SUSPECT_PACK`) instead of
a group each, which held every aggregate's state per line (~1 KiB): 1M lines of plain
text took 1.2 GB. They are judged in slices, in file order with the over-long lines.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from ridtrace.forensics.reading import suspects
from ridtrace.forensics.reading.connection import connect
from ridtrace.forensics.reading.file_map import map_file
from ridtrace.forensics.reading.files import parse
from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.forensics.reading.lean import SUSPECT
from ridtrace.forensics.reading.overlong import LONG_LINE_REASON
from ridtrace.forensics.reading.stats import BadLine, ReadStats
from ridtrace.forensics.records.read import read_partials
from tests.forensics.helpers import rt_request


def _access_line(i: int) -> str:
    return f'127.0.0.1 - - [29/Nov/2026:10:00:00 +0000] "GET /items/{i} HTTP/1.1" 200 5'


def _read(path: Path) -> tuple[ReadStats, list[pa.Table], pa.Table]:
    """A lean read of `path`: its counters, the pass's raw rows, and the span rows."""
    with open(path, "rb") as fh:
        line_map = map_file(fh)
    stats = ReadStats()
    con = connect()
    raw: list[pa.Table] = []

    def run(sql: str) -> pa.Table:
        raw.append(con.sql(sql).to_arrow_table())
        return raw[-1]

    try:
        spans, _ = parse(con, path, line_map, path.name, stats, lean=True, window=None,
                         run=run).spans()
    finally:
        con.close()
    return stats, raw, spans


def test_a_files_suspect_lines_are_one_row_of_the_pass(tmp_path: Path) -> None:
    lines = ([_access_line(i) for i in range(500)] + rt_request("00000000000000a1", "r1", 0, 1)
             + [_access_line(i) for i in range(500, 800)])
    path = tmp_path / "app.log"
    path.write_text("\n".join(lines) + "\n")
    stats, raw, spans = _read(path)
    (got,) = raw
    assert got["_kind"].to_pylist().count(SUSPECT) == 1
    assert got.num_rows == 2  # the suspect lines' row and the request's span
    assert (stats.lines, stats.bad_lines) == (802, 800)
    assert stats.samples == [BadLine("app.log", n, "not JSON") for n in range(1, 11)]
    assert spans["request_id"].to_pylist() == ["r1"]


def test_bad_lines_judged_in_slices_stay_in_file_order_with_over_long_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(suspects, "JUDGED_AT_ONCE", 3)
    long = '{"time":"2026-11-29T10:00:00Z","schema":"ridtrace/1","message":"' + "a" * (20 << 20)
    lines = ["text 1", "text 2", "text 3", "text 4", long + '"}', "text 6", "text 7",
             long + '"}', "text 9", *rt_request("00000000000000a1", "r1", 0, 1)]
    path = tmp_path / "app.log"
    path.write_text("\n".join(lines) + "\n")
    stats, _, spans = _read(path)
    reasons = {5: LONG_LINE_REASON, 8: LONG_LINE_REASON}
    assert stats.samples == [BadLine("app.log", n, reasons.get(n, "not JSON"))
                             for n in range(1, 10)]
    assert stats.bad_lines == 9
    assert spans["request_id"].to_pylist() == ["r1"]


def test_small_files_read_in_one_batch_number_their_own_bad_lines(tmp_path: Path) -> None:
    # Files batched into one query (`reading.small_files`) number their suspect lines
    # from their own line 1.
    (tmp_path / "a.log").write_text(
        "\n".join([*rt_request("00000000000000a1", "r1", 0, 1), "junk a3", "junk a4"]) + "\n")
    (tmp_path / "b.log").write_text(
        "\n".join(["junk b1", *rt_request("00000000000000b1", "r2", 0, 1), "junk b4"]) + "\n")
    read = read_partials(expand_inputs([str(tmp_path)]))
    assert [(s.file.rsplit("/", 1)[-1], s.line) for s in read.stats.samples] == [
        ("a.log", 3), ("a.log", 4), ("b.log", 1), ("b.log", 4)]
    assert read.stats.bad_lines == 4
