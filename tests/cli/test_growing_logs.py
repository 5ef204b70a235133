"""A live log that grows while it is read is read whole, at its own line numbers.

A big plain file is parsed in place by DuckDB while its lines are numbered by another
read of it. Beside a running service the two reads end at different lengths: DuckDB
then held rows the line map never saw, and a file with a blank line stopped the run
(IndexError, exit 4); without one, the summary counted fewer lines than the bad line it
cited. Small files are numbered from the copy DuckDB reads (`small_files.BatchCopy`).
The writer is simulated at a fixed point (a line map made while only the first lines
were written, a line written just after a batch's copy), so the test does not race the
reader.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ridtrace.forensics.reading import files, small_files
from tests.cli.helpers import analyze_json
from tests.forensics.helpers import rt_request


def _live_log(path: Path) -> tuple[int, int]:
    """A blank line, one request, then (written later) two holding ``r2`` at once.

    Returns the bytes written first and the line of the second ``r2`` caller's start.
    """
    first = ["", *rt_request("a" * 16, "r1", 0, 1)]
    later = [*rt_request("b" * 16, "r2", 2, 4), *rt_request("c" * 16, "r2", 3, 5)]
    head = "\n".join(first) + "\n"
    path.write_text(head + "\n".join(later) + "\n")
    return len(head.encode()), len(first) + 3


def _mapped_early(module: Any, monkeypatch: pytest.MonkeyPatch, log: Path, written: int) -> None:
    """`module.map_file` sees only the first `written` bytes of `log` the first time."""
    real: Callable[..., Any] = module.map_file
    calls: list[int] = []

    def map_file(stream: Any, *args: Any, **kwargs: Any) -> Any:
        if Path(stream.name) == log and not calls:
            calls.append(1)
            return real(io.BufferedReader(io.BytesIO(stream.read(written))), *args, **kwargs)
        return real(stream, *args, **kwargs)

    monkeypatch.setattr(module, "map_file", map_file)


def _assert_read_whole(log: Path, second_start: int) -> None:
    code, doc = analyze_json(str(log.parent))
    assert code == 1, doc
    summary = doc["summary"]
    assert (summary["lines"], summary["bad_lines"], summary["requests"]) == (6, 0, 3)
    [found] = [f for f in doc["findings"] if f["kind"] == "duplicate_in_flight"]
    assert {e["line"] for e in found["evidence"]} == {4, 5, second_start, second_start + 1}


def test_a_log_that_grew_past_its_line_map_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    log = tmp_path / "frontend.jsonl"
    written, second_start = _live_log(log)
    monkeypatch.setattr(small_files, "SMALL_FILE_BYTES", 0)  # read alone, in place
    _mapped_early(files, monkeypatch, log, written)
    _assert_read_whole(log, second_start)


def test_a_small_log_that_grows_while_its_batch_is_read_is_read_as_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Small files are copied end to end and numbered from that copy, which DuckDB reads:
    # lines written after it are the next run's, never rows of a map that did not see them.
    log = tmp_path / "frontend.jsonl"
    _, second_start = _live_log(log)
    (tmp_path / "worker.jsonl").write_text("\n".join(rt_request("d" * 16, "r3", 6, 7)) + "\n")
    copy = small_files.BatchCopy.add

    def copy_then_grow(batch: small_files.BatchCopy, path: Path, *args: Any) -> Any:
        line_map = copy(batch, path, *args)
        if path == log:  # a third caller holding r2, logged just after the copy
            with open(log, "a") as fh:
                fh.write("\n".join(rt_request("e" * 16, "r2", 3.5, 4.5)) + "\n")
        return line_map

    monkeypatch.setattr(small_files.BatchCopy, "add", copy_then_grow)
    code, doc = analyze_json(str(tmp_path))
    assert code == 1, doc
    assert (doc["summary"]["lines"], doc["summary"]["bad_lines"]) == (8, 0)
    [found] = [f for f in doc["findings"] if f["kind"] == "duplicate_in_flight"]
    assert {(Path(e["file"]).name, e["line"]) for e in found["evidence"]} == {
        ("frontend.jsonl", n) for n in (4, 5, second_start, second_start + 1)
    }
