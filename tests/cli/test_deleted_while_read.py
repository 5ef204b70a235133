"""A log deleted after the paths were listed (logrotate removing its oldest part,
``maxage`` or ``rotate N``, while the logs are read) is an incomplete read, not a crash.

The paths are listed first and opened one after the other: a file that vanished in
between stopped the run with a traceback, exit 4 ('ridtrace itself failed'), and no
report. The deletion is made at a fixed point, as a file is opened, so the test does not
race the reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ridtrace.forensics.reading import small_files, source_open
from tests.cli.helpers import analyze_json, analyzed_with_parse_hook, rotated_app_logs


def _delete_once(path: Path) -> None:
    """Delete `path` if it is still there. Two reading threads run the hook at once:
    checked, then deleted, the second deletion failed in the other file's read, which
    was then noted unreadable too (a flaky test, not the reader's doing)."""
    path.unlink(missing_ok=True)


@pytest.mark.parametrize("alone", [True, False], ids=["read-alone", "read-batched"])
def test_a_log_deleted_between_listing_and_reading_makes_it_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, alone: bool,
) -> None:
    logs = tmp_path / "logs"
    rotated_app_logs(logs)
    if alone:
        monkeypatch.setattr(small_files, "SMALL_FILE_BYTES", 0)
    real = source_open.open_raw

    def open_raw(src: Any) -> Any:
        _delete_once(logs / "app.jsonl.1")
        return real(src)

    monkeypatch.setattr(source_open, "open_raw", open_raw)
    code, doc = analyze_json(str(logs))
    assert code == 3, doc
    notes = {Path(n["file"]).name: n["reason"] for n in doc["summary"]["unreadable_files"]}
    assert list(notes) == ["app.jsonl.1"]
    assert "no such file or directory" in notes["app.jsonl.1"].lower()
    assert doc["summary"]["requests"] == 3  # the other file is read


def test_a_log_deleted_before_duckdb_opens_it_makes_it_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Opened and sniffed, then DuckDB and the line map open it again by its name.
    logs = tmp_path / "logs"

    def delete_the_rotated_part(_: Path) -> None:
        _delete_once(logs / "app.jsonl.1")

    code, doc, notes = analyzed_with_parse_hook(logs, monkeypatch, delete_the_rotated_part)
    assert code == 3, doc
    assert list(notes) == ["app.jsonl.1"]
    assert "deleted since it was listed" in notes["app.jsonl.1"]
