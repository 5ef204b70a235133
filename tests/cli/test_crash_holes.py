"""A log a crash left a hole in: the file's size was written, the lines in the page cache
were not, so a run of NUL bytes stands where they were and the restarted service's first
line follows it on the same line. That record is read; the hole makes the result
incomplete (the lines it stands for may hold the incident), however few bad lines."""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ridtrace.testing.synth import SynthSpec, write_logs
from tests.cli.helpers import analyze_json
from tests.support.extras import ENGINES

Report = tuple[int, dict[str, Any]]


@pytest.fixture(scope="module")
def synth_logs(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int], Path]:
    """Synthetic logs of `requests` requests, written once a module: the tests only read
    them and make their holes in copies (`_copy_to_make_a_hole_in`)."""
    written: dict[int, Path] = {}

    def logs(requests: int) -> Path:
        if requests not in written:
            written[requests] = tmp_path_factory.mktemp(f"plain-{requests}")
            write_logs(written[requests], SynthSpec(requests=requests))
        return written[requests]

    return logs


@pytest.fixture(scope="module")
def unholed_report(synth_logs: Callable[[int], Path]) -> Callable[..., Report]:
    """``analyze_json`` of the unholed `synth_logs(requests)` with `args`, read once a
    module for each (the reports the holed copies are compared with: a dozen identical
    reads of ~0.2-0.5 s of CPU each), a fresh copy for each test."""
    reports: dict[tuple[int, tuple[str, ...]], Report] = {}

    def report(requests: int, *args: str) -> Report:
        if (requests, args) not in reports:
            reports[requests, args] = analyze_json(str(synth_logs(requests)), *args)
        code, doc = reports[requests, args]
        return code, copy.deepcopy(doc)

    return report


def _copy_to_make_a_hole_in(plain: Path, tmp_path: Path) -> Path:
    """A copy of the synthetic logs `plain`, to make a hole in."""
    holed = tmp_path / "holed"
    holed.mkdir()
    for path in plain.iterdir():
        (holed / path.name).write_bytes(path.read_bytes())
    return holed


# A hole longer than the 16 MiB a line may be was one line too long, a bad line whatever
# followed it: the record after it was lost, with no note of a crash (a silent "No
# findings." for an Unlinked error there). Read whole, such a hole cost as much memory
# (10 GB for a preallocated log): it is judged by its first 16 MiB + 1, in both engines.
# Compressed, the log is read from a staged copy, which keeps what the plain read judges.
HOLES = [4096, 20 << 20]


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("hole", HOLES)
@pytest.mark.parametrize("engine", ENGINES)
def test_the_record_after_a_crash_hole_is_read_and_the_read_is_incomplete(
    tmp_path: Path, engine: str, hole: int, compressed: bool,
    synth_logs: Callable[[int], Path], unholed_report: Callable[..., Report],
) -> None:
    holed = _copy_to_make_a_hole_in(synth_logs(200), tmp_path)
    front = holed / "frontend.jsonl"
    lines = front.read_bytes().split(b"\n")
    lines[300] = b"\x00" * hole + lines[300]  # the restarted service's first line
    front.write_bytes(b"\n".join(lines))
    if compressed:
        front.unlink()
        front = front.with_name("frontend.jsonl.1.gz")
        front.write_bytes(gzip.compress(b"\n".join(lines), compresslevel=1))
    _, want = unholed_report(200)
    code, got = analyze_json(str(holed), "--engine", engine)
    summary = got["summary"]
    assert summary["requests"] == want["summary"]["requests"]  # line 301 was read
    assert [(f["kind"], f["span_id"]) for f in got["findings"]] == [
        (f["kind"], f["span_id"]) for f in want["findings"]
    ]
    shown = str(hole) if hole <= 16 << 20 else f"more than {16 << 20}"
    assert summary["bad_line_samples"] == [{
        "file": str(front), "line": 301,
        "reason": f"{shown} NUL bytes before its record (lines lost in a crash?)",
    }]
    assert summary["incomplete_reasons"] == [
        f"{front}: a run of NUL bytes where a crash lost lines (see its bad lines)"
    ]
    assert summary["bad_lines"] < 0.01 * summary["lines"]
    assert code == 1  # the findings; without them 3


def test_a_hole_at_the_end_is_a_bad_line_and_an_incomplete_read(tmp_path: Path) -> None:
    log = tmp_path / "app.jsonl"
    record = json.dumps({"time": "2026-11-29T10:00:00Z", "schema": "ridtrace/1"})
    log.write_bytes((record + "\n").encode() * 200 + b"\x00" * 512)
    code, doc = analyze_json(str(log))
    assert doc["summary"]["bad_line_samples"][0]["reason"] == (
        "512 NUL bytes (lines lost in a crash?)"
    )
    assert doc["summary"]["incomplete"] is True
    assert code == 3


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("hole", HOLES)
def test_a_hole_opening_the_file_is_a_copytruncates_not_a_crashs(
    tmp_path: Path, engine: str, hole: int,
    synth_logs: Callable[[int], Path], unholed_report: Callable[..., Report],
) -> None:
    # A writer that does not append writes past logrotate's copytruncate: the live file
    # opens with NULs, its earlier lines in the rotated copy. 893fcd6 took that hole for
    # a crash's (a bad line, the read incomplete, exit 3) where 7e79e7e reads it clean.
    holed = _copy_to_make_a_hole_in(synth_logs(50), tmp_path)
    front = holed / "frontend.jsonl"
    front.write_bytes(b"\x00" * hole + front.read_bytes())
    want_code, want = unholed_report(50, "--engine", engine)
    code, got = analyze_json(str(holed), "--engine", engine)
    summary = got["summary"]
    assert summary["bad_lines"] == 0, summary["bad_line_samples"]
    assert summary["unreadable_files"] == [] and not summary["incomplete"]
    assert summary["requests"] == want["summary"]["requests"]
    assert code == want_code


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("hole", [9 << 20, 9_000_000])  # the second ends mid-page
def test_a_short_torn_line_after_a_copytruncate_hole_is_no_long_record_lost(
    tmp_path: Path, compressed: bool, hole: int,
    synth_logs: Callable[[int], Path], unholed_report: Callable[..., Report],
) -> None:
    # The truncation cut a record: what was written of the next one follows the hole.
    # Measured with the hole, that 30-byte line was "a record of 4 KiB or more cut
    # short": the read incomplete, exit 3, for one bad line under the 1 %.
    torn = b'{"time":"garbage, torn record'
    holed = _copy_to_make_a_hole_in(synth_logs(50), tmp_path)
    front = holed / "frontend.jsonl"
    data = b"\x00" * hole + torn + b"\n" + front.read_bytes()
    if compressed:
        front.unlink()
        (holed / "frontend.jsonl.gz").write_bytes(gzip.compress(data))
    else:
        front.write_bytes(data)
    want_code, want = unholed_report(50)
    code, got = analyze_json(str(holed))
    summary = got["summary"]
    assert summary["bad_lines"] == 1 and summary["unreadable_files"] == []
    assert not summary["incomplete"], summary["incomplete_reasons"]
    assert (code, summary["requests"]) == (want_code, want["summary"]["requests"])


@pytest.mark.extra("dask")
def test_a_copytruncate_hole_longer_than_a_dask_partition_is_no_crash(
    tmp_path: Path, synth_logs: Callable[[int], Path],
) -> None:
    # The block holding the end of such a first line is not the file's first block: it
    # judged the hole as a crash's (a bad line, exit 3) where the local engine reads the
    # log clean.
    holed = _copy_to_make_a_hole_in(synth_logs(50), tmp_path)
    front = holed / "frontend.jsonl"
    front.write_bytes(b"\x00" * (3 << 20) + front.read_bytes())
    want_code, want = analyze_json(str(holed))
    code, got = analyze_json(str(holed), "--engine", "dask", "--partition-size", "1MiB")
    assert got["summary"]["bad_lines"] == 0, got["summary"]["bad_line_samples"]
    assert not got["summary"]["incomplete"]
    assert (code, got["summary"]["requests"]) == (want_code, want["summary"]["requests"])


def _zero_pages(data: bytes, first: int, last: int) -> tuple[bytes, int]:
    """`data` with the 4 KiB pages holding bytes `first` to `last` zeroed, as a crash
    leaves pages of the page cache that never reached the disk; and the bytes zeroed."""
    start, end = first // 4096 * 4096, (last // 4096 + 1) * 4096
    assert b"\n" not in data[start - 1:start + 1] + data[end - 1:end + 1]  # mid-line
    return data[:start] + b"\x00" * (end - start) + data[end:], end - start


@pytest.mark.parametrize("engine", ENGINES)
def test_a_hole_starting_mid_line_makes_the_read_incomplete(
    tmp_path: Path, engine: str, synth_logs: Callable[[int], Path],
) -> None:
    # The pages zeroed start and end inside lines: the lost lines, newlines and all,
    # are one line with the two halves around them. It was one "binary data" (or
    # "UTF-32 text") bad line under the 1 % rule, and "No findings", exit 0.
    holed = _copy_to_make_a_hole_in(synth_logs(400), tmp_path)
    front = holed / "frontend.jsonl"
    data = front.read_bytes()
    middle = len(data) // 2 + 1234
    zeroed, hole = _zero_pages(data, middle, middle + 5000)
    front.write_bytes(zeroed)
    code, got = analyze_json(str(holed), "--engine", engine)
    summary = got["summary"]
    (sample,) = summary["bad_line_samples"]
    assert sample["reason"] == f"{hole} NUL bytes inside the line (lines lost in a crash?)"
    assert sample["file"] == str(front)
    assert summary["incomplete_reasons"] == [
        f"{front}: a run of NUL bytes where a crash lost lines (see its bad lines)"
    ]
    assert summary["bad_lines"] == 1 < 0.01 * summary["lines"]
    assert code == (1 if summary["errors"] else 3)  # 3 unless error findings remain


def test_the_record_after_a_hole_that_started_mid_line_is_read(tmp_path: Path) -> None:
    record = {"time": "2026-11-29T10:00:00Z", "schema": "ridtrace/1",
              "event": "request.start", "request_id": "r-1", "trace_id": "a" * 32,
              "span_id": "b" * 16}
    log = tmp_path / "app.jsonl"
    log.write_bytes(b'{"time": "2026-11-29T09:59:59Z", "sch' + b"\x00" * 600
                    + json.dumps(record).encode() + b"\n")
    code, doc = analyze_json(str(log))
    assert doc["summary"]["spans"] == 1  # the record after the hole
    assert doc["summary"]["bad_line_samples"][0]["reason"] == (
        "600 NUL bytes inside the line (lines lost in a crash?)"
    )
    assert code == 3


def test_binary_data_with_nuls_is_no_crash_hole(tmp_path: Path) -> None:
    record = json.dumps({"time": "2026-11-29T10:00:00Z", "schema": "ridtrace/1"})
    log = tmp_path / "app.jsonl"
    binary = b"\x89PNG\xff\xfe" + b"\x00" * 64 + b"\xc3\x28\x00"
    log.write_bytes((record + "\n").encode() * 200 + binary + b"\n")
    _, doc = analyze_json(str(log))
    assert doc["summary"]["bad_line_samples"][0]["reason"] == "binary data"
    assert doc["summary"]["unreadable_files"] == []


@pytest.mark.parametrize("engine", ENGINES)
def test_a_hole_of_megabytes_inside_a_line_is_a_crash_not_a_long_record(
    tmp_path: Path, engine: str
) -> None:
    # Longer than the 16 MiB a record may be, the joined line was "a log record longer
    # than 16 MiB is not read ... have the service log less in one line".
    record = {"time": "2026-11-29T10:00:00Z", "schema": "ridtrace/1"}
    lines = (json.dumps(record).encode() + b"\n") * 200
    log = tmp_path / "app.jsonl"
    middle = len(lines) // 2 + 7
    log.write_bytes(lines[:middle] + b"\x00" * (20 << 20) + lines[middle:])
    code, doc = analyze_json(str(log), "--engine", engine)
    summary = doc["summary"]
    assert [s["reason"] for s in summary["bad_line_samples"]] == [
        "line longer than 16 MiB, NUL bytes inside it (lines lost in a crash?)"
    ]
    assert summary["unreadable_files"] == [
        {"file": str(log), "reason": "a run of NUL bytes where a crash lost lines (see its bad lines)"}
    ]
    assert code == 3


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_hole_of_megabytes_then_a_record_too_long_is_a_crash(
    tmp_path: Path, engine: str, compressed: bool
) -> None:
    # Taken for a record too long alone: the file was no crash's, and one bad line
    # under the 1 % was a complete read. (A gzip's copy said so while it cut such a
    # line short; the plain file never did.)
    record = {"time": "2026-11-29T10:00:00Z", "schema": "ridtrace/1"}
    lines = (json.dumps(record).encode() + b"\n") * 200
    long_record = json.dumps({**record, "message": "x" * (17 << 20)}).encode()
    # A blank before the hole, as before a hole that makes no line too long.
    data = lines + b" " + b"\x00" * (20 << 20) + long_record + b"\n" + lines
    log = tmp_path / ("app.jsonl.1.gz" if compressed else "app.jsonl")
    log.write_bytes(gzip.compress(data, compresslevel=1) if compressed else data)
    code, doc = analyze_json(str(log), "--engine", engine)
    summary = doc["summary"]
    assert summary["bad_line_samples"] == [{
        "file": str(log), "line": 201,
        "reason": "line longer than 16 MiB, NUL bytes inside it (lines lost in a crash?)"}]
    assert {"file": str(log), "reason": "a run of NUL bytes where a crash lost lines (see "
            "its bad lines)"} in summary["unreadable_files"]
    assert summary["incomplete"] and code == 3
