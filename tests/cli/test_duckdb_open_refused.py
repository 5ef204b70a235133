"""A log DuckDB cannot open by its name, while it is still there, is an incomplete read.

Under a low open-file limit (`ulimit -n 64`, 3,000 pod logs), DuckDB's open of a file
already sniffed failed with `IO Error: Cannot open file …: Too many open files`, and
only a deletion was taken for a lost file: the run stopped with a traceback, exit 4,
and no report. The refusal is made at a fixed point, as DuckDB is handed the file, so
the test needs no limit of its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from ridtrace.forensics.reading import files, small_files
from tests.cli.helpers import analyze_json, rotated_app_logs


def test_a_log_duckdb_may_not_open_is_listed_and_the_others_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    logs = tmp_path / "logs"
    rotated_app_logs(logs)
    monkeypatch.setattr(small_files, "SMALL_FILE_BYTES", 0)  # each file read alone, in place
    real_parse = files.parse

    def parse_refused_for_the_rotated_part(con: Any, path: Path, *args: Any, **kwargs: Any) -> Any:
        if path.name == "app.jsonl.1":
            raise duckdb.IOException(f'IO Error: Cannot open file "{path}": Too many open files')
        return real_parse(con, path, *args, **kwargs)

    monkeypatch.setattr(files, "parse", parse_refused_for_the_rotated_part)
    code, doc = analyze_json(str(logs))
    notes = {Path(n["file"]).name: n["reason"] for n in doc["summary"]["unreadable_files"]}
    assert list(notes) == ["app.jsonl.1"]
    assert "Too many open files" in notes["app.jsonl.1"]
    assert doc["summary"]["requests"] == 3  # the other file is read
    assert code == 3, doc
