"""Which file a read starts first: the largest (a file's query runs on one core), and a
pipe before any file on disk; results and counters still come in source order."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

import ridtrace.forensics.reading.parallel as parallel
from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.forensics.reading.table import LogTable
from tests.forensics.helpers import rt_request


def _log(path: Path, requests: int) -> None:
    lines = [line for i in range(requests)
             for line in rt_request(f"{i + 1:016x}", f"req-{i}", float(i), i + 0.5)]
    path.write_text("\n".join(lines) + "\n")


def _one_thread_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # One reading thread reads in the order the reads start.
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 1)
    monkeypatch.setattr(parallel, "_SHARED_DATABASE_BYTES", 0)


def test_the_largest_file_is_read_first_and_results_come_in_source_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Started last behind files the other thread had read, a large file ran alone on one
    # core while the others idled.
    _one_thread_at_a_time(monkeypatch)
    for name, requests in (("a.jsonl", 5), ("b.jsonl", 20), ("c.jsonl", 80)):
        _log(tmp_path / name, requests)
    started: list[str] = []

    def use(table: LogTable, file_id: int) -> int:
        started.append(table.name)
        return file_id

    sources = expand_inputs([str(tmp_path)])
    read = parallel.read_all(sources, use, lean=True)
    names = [Path(src.name).name for src in sources]
    assert names == ["a.jsonl", "b.jsonl", "c.jsonl"]
    assert [Path(name).name for name in started] == names[::-1]
    assert read.results == [0, 1, 2]
    assert read.stats.files == 3


def test_a_pipe_is_read_before_the_files_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its size is unknown, and its writer may be waiting for a reader.
    _one_thread_at_a_time(monkeypatch)
    _log(tmp_path / "big.jsonl", 80)
    source = tmp_path / "source.jsonl"
    _log(source, 3)
    fifo = tmp_path / "app.fifo"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "wb") as sink:
            sink.write(source.read_bytes())

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    started: list[str] = []

    def use(table: LogTable, file_id: int) -> int:
        started.append(Path(table.name).name)
        return file_id

    read = parallel.read_all(expand_inputs([str(tmp_path / "big.jsonl"), str(fifo)]), use,
                             lean=True)
    writer.join(timeout=30)
    assert started == ["app.fifo", "big.jsonl"]
    assert read.results == [0, 1]
