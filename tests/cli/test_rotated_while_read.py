"""A log rotated by rename (logrotate's ``create``) while the logs are read is an
incomplete read, not a clean one.

The paths are listed first and opened one after the other. When ``app.jsonl.1`` became
``app.jsonl.2`` and ``app.jsonl`` became ``app.jsonl.1`` in between, the names led to
other files: the old ``app.jsonl.1`` was read under no name, its requests were missing
from a report that said complete (exit 0). The rotation is made at a fixed point, as
the first file is opened, so the test does not race the reader.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from ridtrace.forensics.reading import source_open
from tests.cli.helpers import analyze_json, analyzed_with_parse_hook, rotated_app_logs
from tests.forensics.helpers import rt_request


def _rotate(logs: Path) -> None:
    """logrotate's renames, with no moment where a name is missing: the other reading
    thread, looking at ``app.jsonl.1`` between two renames, found no file there ("deleted
    since it was listed"), where the test asks what a rename over it does."""
    os.link(logs / "app.jsonl.1", logs / "app.jsonl.2")
    os.replace(logs / "app.jsonl", logs / "app.jsonl.1")
    (logs / "app.jsonl").write_text("")


def _rotate_at_first_open(logs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = source_open.open_raw
    rotated: list[bool] = []

    def open_raw(src: Any) -> Any:
        if not rotated:
            rotated.append(True)
            _rotate(logs)
        return real(src)

    monkeypatch.setattr(source_open, "open_raw", open_raw)


def test_a_log_rotated_between_listing_and_reading_makes_it_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    logs = tmp_path / "logs"
    rotated_app_logs(logs)
    code, doc = analyze_json(str(logs))
    assert code == 1 and doc["summary"]["incomplete"] is False  # read before the rotation
    _rotate_at_first_open(logs, monkeypatch)
    code, doc = analyze_json(str(logs))
    assert code == 3, doc
    notes = {Path(n["file"]).name: n["reason"] for n in doc["summary"]["unreadable_files"]}
    assert set(notes) == {"app.jsonl.1", "app.jsonl"}
    assert all("replaced by another file" in reason for reason in notes.values())


def test_a_log_that_only_grew_is_the_file_listed(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    rotated_app_logs(logs)
    with open(logs / "app.jsonl", "a") as fh:
        fh.write("\n".join(rt_request("c" * 16, "r9", 9, 10)) + "\n")
    code, doc = analyze_json(str(logs))
    assert code == 1 and doc["summary"]["unreadable_files"] == []


def test_a_log_rotated_while_it_is_read_makes_it_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Opened before the rotation, but DuckDB and the line map open it again by its name.
    logs = tmp_path / "logs"
    rotated: list[bool] = []

    def rotate_once(_: Path) -> None:
        if not rotated:
            rotated.append(True)
            _rotate(logs)

    code, doc, notes = analyzed_with_parse_hook(logs, monkeypatch, rotate_once)
    assert code == 3, doc
    assert "replaced by another file" in notes["app.jsonl.1"]
