"""`trace`, `export jaeger` and `audit` read small files in batches, as `analyze` does, and
show what a one-by-one read shows.

They read every event of every file, one DuckDB query per file: 3,111 pod logs took over
a minute of CPU where `analyze`, which parses runs of small files by one query
(`reading.small_files`), took seconds. Batched, each file must still come out as if
read alone: its lines numbered from 1, its bad lines and their samples, the odd file
(gzip, a BOM, blank only, a torn last line) read its own way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import ridtrace.forensics.reading.small_files as small_files
from ridtrace.cli.main import main
from tests.forensics.test_small_files import _pod_logs


@pytest.fixture(scope="module")
def pods(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _pod_logs(tmp_path_factory.mktemp("view-pods"))


def _run(args: list[str], out: Path) -> dict[str, Any]:
    """A command's exit code, stdout, stderr and the file it wrote (`out`, when any)."""
    result = CliRunner().invoke(main, args, env={"COLUMNS": "100"})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return {"exit": result.exit_code, "stdout": result.stdout, "stderr": result.stderr,
            "file": out.read_text() if out.exists() else None}


COMMANDS = {
    "trace-ridtrace": ["trace", "7", "{pods}", "--limit", "0", "--format", "json"],
    "trace-dynamo-text": ["trace", "retry-84", "{pods}", "--limit", "0"],
    "export": ["export", "jaeger", "{pods}", "-o", "{out}", "--include-health"],
    "audit": ["audit", "{pods}", "--format", "json", "--by", "client"],
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_batched_read_shows_what_a_one_by_one_read_shows(
    name: str, pods: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    batches: list[int] = []
    batch_events = small_files.batch_events

    def counted(*args: Any, **kwargs: Any) -> Any:
        tables = batch_events(*args, **kwargs)
        batches.append(len(tables))
        return tables

    def args(out: Path) -> list[str]:
        return [a.format(pods=pods, out=out) for a in COMMANDS[name]]

    monkeypatch.setattr(small_files, "batch_events", counted)
    batched = _run(args(tmp_path / "batched.json"), tmp_path / "batched.json")
    # Most of the directory's files went through batches (the others are read alone).
    assert sum(batches) >= 60, batches
    monkeypatch.setattr(small_files, "SMALL_FILE_BYTES", -1)  # no file is small: one by one
    batches.clear()
    alone = _run(args(tmp_path / "alone.json"), tmp_path / "alone.json")
    assert not batches
    batched["stderr"] = batched["stderr"].replace("batched.json", "OUT")
    alone["stderr"] = alone["stderr"].replace("alone.json", "OUT")
    assert batched == alone
    # The read found what there is to show, bad lines included (cited by file:line).
    assert batched["exit"] in (0, 3) and (batched["stdout"] or batched["file"])
    assert "pod: starting" not in batched["stderr"]


def test_the_spans_of_many_files_are_one_query(
    pods: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`build_requests` (every view's spans) asked DuckDB for each file's spans apart, a
    scan of the whole events table each: quadratic in the files, over a minute of CPU
    for 3,111 pod logs once they were read. One query groups them by file, each file's
    spans still a part of their own (the existing views' tests hold their output)."""
    import ridtrace.forensics.records.spans as spans
    from ridtrace.forensics.reading.events import load_events

    events = load_events([str(pods)]).events
    queries: list[str] = []
    connect = spans.shared_cursor

    class Counted:
        def __init__(self) -> None:
            self._con = connect()

        def execute(self, text: str, *args: Any) -> Any:
            queries.append(text)
            return self._con.execute(text, *args)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._con, name)

    monkeypatch.setattr(spans, "shared_cursor", Counted)
    requests = spans.build_requests(events)
    assert events["file"].nunique() > 60 and len(queries) == 1
    assert len(requests) > 0
