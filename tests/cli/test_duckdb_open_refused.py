"""A log DuckDB cannot open by its name, while it is still there, is an incomplete read.

Under a low open-file limit (`ulimit -n 64`, 3,000 pod logs), DuckDB's open of a file
already sniffed failed with `IO Error: Cannot open file …: Too many open files`, and
only a deletion was taken for a lost file: the run stopped with a traceback, exit 4,
and no report. The refusal is made at a fixed point, as DuckDB is handed the file, so
the test needs no limit of its own.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from tests.cli.helpers import analyzed_with_parse_hook


def test_a_log_duckdb_may_not_open_is_listed_and_the_others_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse_the_rotated_part(path: Path) -> None:
        if path.name == "app.jsonl.1":
            raise duckdb.IOException(f'IO Error: Cannot open file "{path}": Too many open files')

    code, doc, notes = analyzed_with_parse_hook(tmp_path / "logs", monkeypatch,
                                                refuse_the_rotated_part)
    assert list(notes) == ["app.jsonl.1"]
    assert "Too many open files" in notes["app.jsonl.1"]
    assert doc["summary"]["requests"] == 3  # the other file is read
    assert code == 3, doc
