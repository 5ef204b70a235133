"""A log truncated while it is read (logrotate's ``copytruncate`` running beside the
analysis) is an incomplete read, not a clean one.

Lines that were in the file when the read began are missing from the report, and the
line map and DuckDB may each have seen another length of it (a bad line was cited at
a line the file no longer had). The read went on without a word: exit 0 or 1 on a
fraction of the log. The truncation is made at a fixed point of the read, the start of
the parse, so the test does not race the reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.forensics.reading import files
from tests.cli.helpers import analyze_json
from tests.forensics.helpers import rt_request


def _requests_log(log: Path, count: int) -> list[str]:
    """`log` holding `count` frontend requests, one after the other; its lines."""
    lines = [line for i in range(count) for line in rt_request(f"{i + 1:016x}", f"r{i}", i, i + 0.5)]
    log.write_text("\n".join(lines) + "\n")
    return lines


def test_a_log_truncated_during_the_read_makes_it_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    log = tmp_path / "frontend.jsonl"
    lines = _requests_log(log, 200)
    kept = len("\n".join(lines[:20])) + 1
    real_parse = files.parse

    def parse_after_a_rotation(*args: Any, **kwargs: Any) -> Any:
        with open(log, "r+b") as fh:
            fh.truncate(kept)
        return real_parse(*args, **kwargs)

    monkeypatch.setattr(files, "parse", parse_after_a_rotation)
    _assert_read_as_truncated(log)


def test_a_log_that_grows_during_the_read_is_read_as_usual(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The common case beside a running service: lines appended meanwhile are no loss.
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(rt_request("a" * 16, "r1", 0, 1)) + "\n")
    real_parse = files.parse

    def parse_while_written(*args: Any, **kwargs: Any) -> Any:
        with open(log, "a") as fh:
            fh.write("\n".join(rt_request("b" * 16, "r2", 2, 3)) + "\n")
        return real_parse(*args, **kwargs)

    monkeypatch.setattr(files, "parse", parse_while_written)
    code, doc = analyze_json(str(log))
    assert code == 0 and doc["summary"]["unreadable_files"] == []


def test_a_staged_log_truncated_during_its_copy_makes_it_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A plain log that is not read in place (here one with a byte-order mark; a UTF-16
    # one, an unwrapped container log or a non-UTF-8 name go the same way) is copied
    # first: truncated meanwhile, the copy ended early and the report said complete.
    log = tmp_path / "frontend.jsonl"
    lines = [line for i in range(2000) for line in rt_request(f"{i + 1:016x}", f"r{i}", i, i + 0.5)]
    body = ("\n".join(lines) + "\n").encode()
    assert len(body) > 4 * (64 << 10)  # well past the head read before the copy
    log.write_bytes(b"\xef\xbb\xbf" + body)
    real_stage = files.stage

    def stage_after_a_rotation(*args: Any, **kwargs: Any) -> Any:
        with open(log, "r+b") as fh:
            fh.truncate(2 * (64 << 10))
        return real_stage(*args, **kwargs)

    monkeypatch.setattr(files, "stage", stage_after_a_rotation)
    _assert_read_as_truncated(log)


def _assert_read_as_truncated(log: Path) -> None:
    """`analyze` of `log` says the input is incomplete, naming the truncated file."""
    code, doc = analyze_json(str(log))
    summary = doc["summary"]
    assert code == 3, summary
    (note,) = summary["unreadable_files"]
    assert note["file"] == str(log) and "truncated while being read" in note["reason"]
    assert summary["incomplete"] is True


def test_a_log_truncated_after_it_was_listed_makes_it_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Between a walk's listing and the file's open (minutes apart in a walk of thousands
    # of files), copytruncate emptied it: compared with its size at the open only, the
    # read was complete and clean, exit 0, every line of the log lost without a word.
    from ridtrace.forensics.reading import source_open

    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(rt_request("a" * 16, "r1", 0, 1)) + "\n")
    real_open = source_open.open_raw

    def open_after_a_rotation(src: Any) -> Any:
        log.write_bytes(b"")
        return real_open(src)

    monkeypatch.setattr(source_open, "open_raw", open_after_a_rotation)
    _assert_read_as_truncated(log)


def test_a_log_truncated_and_written_past_its_size_during_the_read_makes_it_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # copytruncate under a writer that does not append: its next line lands at its old
    # offset, after a hole, and the file is as long as before. The size check passed,
    # and the lines lost were lost with exit 0.
    log = tmp_path / "frontend.jsonl"
    body = ("\n".join(_requests_log(log, 200)) + "\n").encode()
    real_parse = files.parse

    def parse_after_a_rotation(*args: Any, **kwargs: Any) -> Any:
        got = real_parse(*args, **kwargs)
        with open(log, "r+b") as fh:
            fh.truncate(0)
            fh.seek(len(body))
            fh.write(rt_request("f" * 16, "late", 500, 501)[0].encode() + b"\n")
        return got

    monkeypatch.setattr(files, "parse", parse_after_a_rotation)
    code, doc = analyze_json(str(log))
    assert code == 3, doc["summary"]
    # (The read may meet the hole too, a crash's NUL run: noted beside it.)
    reasons = [n["reason"] for n in doc["summary"]["unreadable_files"] if n["file"] == str(log)]
    assert any("truncated while being read" in reason for reason in reasons), reasons


def test_a_line_over_the_limit_the_map_never_saw_makes_it_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Rewritten after its lines were mapped (copytruncate, the writer going on at its
    # old offset): DuckDB met a hole over 16 MiB the map does not hold, and its error
    # reached the user as a traceback, exit 4.
    log = tmp_path / "frontend.jsonl"
    # Over a small file's size, read in place (a batch of small files is read whole).
    lines = _requests_log(log, 3000)
    assert log.stat().st_size > 1 << 20
    real_map = files.map_file

    def map_then_a_rewrite(*args: Any, **kwargs: Any) -> Any:
        mapped = real_map(*args, **kwargs)
        with open(log, "r+b") as fh:  # copytruncate; the writer goes on at 40 MiB
            fh.truncate(0)
            fh.seek(40 << 20)
            fh.write(lines[0].encode() + b"\n")
        return mapped

    monkeypatch.setattr(files, "map_file", map_then_a_rewrite)
    code, doc = analyze_json(str(log))
    summary = doc["summary"]
    assert code == 3, summary
    (note,) = summary["unreadable_files"]
    assert note["file"] == str(log) and "changed while being read" in note["reason"]


def test_a_log_truncated_under_duckdbs_read_is_named_truncated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Truncated while DuckDB reads it in place, its read fails ("Could not read enough
    # bytes from file"): the file was named with DuckDB's IO Error, and stderr said "no
    # log lines found" beside it, where the docs name such a file "truncated while being
    # read".
    import duckdb

    log = tmp_path / "frontend.jsonl"
    _requests_log(log, 200)

    def parse_cut_short(*args: Any, **kwargs: Any) -> Any:
        with open(log, "r+b") as fh:
            fh.truncate(0)
        raise duckdb.IOException(f'IO Error: Could not read enough bytes from file "{log}"')

    monkeypatch.setattr(files, "parse", parse_cut_short)
    code, doc = analyze_json(str(log))
    [note] = doc["summary"]["unreadable_files"]
    assert note["reason"].startswith("truncated while being read"), note
    assert code == 3
    _requests_log(log, 200)
    said = CliRunner().invoke(main, ["analyze", str(log)]).stderr
    assert "could not read all of" in said and "no log lines found" not in said, said
