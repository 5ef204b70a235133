"""Parsing robustness: bad lines are counted with file:line samples, good lines kept."""

from __future__ import annotations

import gzip
import io
import json
import sys
from datetime import UTC
from pathlib import Path

import pytest

from ridtrace.forensics.reading.events import load_events
from ridtrace.forensics.reading.inputs import ForensicsInputError
from ridtrace.forensics.reading.judge import NESTED_FILE
from tests.forensics.helpers import rt, rt_request

SAMPLE = Path("/work/shared/samples/dynamo-jsonl-sample.jsonl")


def _write(path: Path, lines: list[str | bytes]) -> Path:
    data = b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines)
    path.write_bytes(data)
    return path


def _reasons(logs: object) -> dict[int, str]:
    return {s.line: s.reason for s in logs.stats.samples}  # type: ignore[attr-defined]


def test_clean_file_keeps_every_line_number(tmp_path: Path) -> None:
    lines = rt_request("a" * 16, "r1", 0, 1) + rt_request("b" * 16, "r2", 0.5, 2)
    logs = load_events([str(_write(tmp_path / "f.jsonl", lines))])
    assert logs.stats.lines == 4 and logs.stats.bad_lines == 0
    assert list(logs.events["line"]) == [1, 2, 3, 4]


@pytest.mark.parametrize("stamp", [
    "2026-11-29T10:00:01.5Z", "2026-11-29t10:00:01.5z", "2026-11-29T11:00:01.5+01:00",
    "2026-11-29 10:00:01.5+00:00", "2026-11-29T10:00:01.500000000Z",
])
def test_rfc3339_times_in_any_allowed_spelling_are_read(tmp_path: Path, stamp: str) -> None:
    logs = load_events([str(_write(tmp_path / "f.jsonl", [rt("request.start", time=stamp)]))])
    assert logs.stats.bad_lines == 0, _reasons(logs)
    assert [t.isoformat() for t in logs.events["time"]] == ["2026-11-29T10:00:01.500000+00:00"]



@pytest.mark.parametrize("stamp", [
    # Python before 3.12 leaves strftime's "%:z" as it is: the local time, its offset lost.
    "2026-11-29T11:00:01.500000%:z", "2026-11-29T11:00:01.500000junkZ", "2026-11-29T11:00:01.500000%+01:00",
])
def test_a_time_with_text_before_its_offset_is_an_invalid_time(tmp_path: Path, stamp: str) -> None:
    # DuckDB reads none of these; Python 3.11's fromisoformat skipped whatever followed
    # six digits of fraction, so "%:z" became "Z" and the writer's local time was read as
    # UTC, an hour off here and silently, where it is no RFC 3339 time at all.
    good = rt_request("a" * 16, "r1", 0, 1)
    logs = load_events([str(_write(tmp_path / "f.jsonl", [
        good[0], rt("request.start", time=stamp, span_id="b" * 16), good[1]]))])
    assert _reasons(logs) == {2: "invalid time"}
    assert list(logs.events["line"]) == [1, 3]


def test_a_nanosecond_time_python_judges_is_read_to_the_microsecond(tmp_path: Path) -> None:
    # The lone surrogate sends the line to the standard library's parser.
    odd = rt("request.start", time="2026-11-29T11:00:01.500000789+01:00", request_id="\udc80")
    logs = load_events([str(_write(tmp_path / "f.jsonl", [odd]))])
    assert logs.stats.bad_lines == 0, _reasons(logs)
    assert [t.isoformat() for t in logs.events["time"]] == ["2026-11-29T10:00:01.500000+00:00"]

def test_bad_lines_are_counted_and_located(tmp_path: Path) -> None:
    good = rt_request("a" * 16, "r1", 0, 1)
    lines: list[str | bytes] = [
        good[0],
        "this is not json",
        '{"time":"2026-11-29T10:00:00.000000Z","schema":"ridtrace/1","request_id":"x"',  # cut
        b"\x00\x01\xfe\xff binary",
        "",  # blank lines are not bad lines
        rt("request.end", request_id={"nested": 1}),  # odd, but valid JSON: a good line
        json.dumps({"time": "2026-11-29T10:00:00Z", "msg": "no format marker"}),
        rt(None, time="yesterday"),
        json.dumps({"schema": "ridtrace/1", "message": "no time"}),
        "[1, 2, 3]",
        '{"a": 1}{"b": 2}',
        good[1],
    ]
    logs = load_events([str(_write(tmp_path / "f.jsonl", lines))])
    assert logs.stats.lines == 12  # the cat-joined line holds two records
    assert logs.stats.bad_lines == 9  # both of its records lack a time
    assert list(logs.events["line"]) == [1, 6, 12]
    reasons = _reasons(logs)
    assert reasons[2] == "not JSON"
    assert reasons[3] == "truncated JSON"
    assert reasons[4] == "binary data"
    assert reasons[7] == "unknown format"
    assert reasons[8] == "invalid time"
    assert reasons[9] == "missing time"
    assert reasons[10] == "not a JSON object"
    assert reasons[11] == "2 JSON objects on one line, 2 of them missing time"  # cat-joined
    assert all(s.file.endswith("f.jsonl") for s in logs.stats.samples)


def test_a_leap_second_is_read_as_the_next_second(tmp_path: Path) -> None:
    # RFC 3339 allows second 60 (§5.7); POSIX time counts it as the next second.
    logs = load_events([str(_write(tmp_path / "f.jsonl", [
        rt("request.start", time="2016-12-31T23:59:60.5Z")]))])
    assert logs.stats.bad_lines == 0, _reasons(logs)
    assert [t.isoformat() for t in logs.events["time"]] == ["2017-01-01T00:00:00.500000+00:00"]


@pytest.mark.parametrize("stamp", ["9999-12-31T23:00:00-05:00", "0001-01-01T00:00:00+01:00"])
def test_a_time_with_no_utc_datetime_is_a_bad_line_when_python_judges_it(
    tmp_path: Path, stamp: str
) -> None:
    # The lone surrogate sends the line to the standard library's parser; its UTC time
    # would fall in year 10000 or year 0, which a datetime cannot hold (OverflowError).
    good = rt_request("a" * 16, "r1", 0, 1)
    odd = rt("request.start", time=stamp, request_id="\udc80", span_id="b" * 16)
    logs = load_events([str(_write(tmp_path / "f.jsonl", [good[0], odd, good[1]]))])
    assert _reasons(logs) == {2: "invalid time"}
    assert list(logs.events["line"]) == [1, 3]


@pytest.mark.parametrize("odd_field", [False, True], ids=["duckdb", "python"])
def test_year_0000_is_an_invalid_time_on_either_side_of_the_read(
    tmp_path: Path, odd_field: bool
) -> None:
    # DuckDB read it as 1 BC (a request shown starting then), Python as no time: the
    # same line was a request or a bad line by a lone surrogate elsewhere on it.
    good = rt_request("a" * 16, "r1", 0, 1)
    fields = {"prompt": "\udc80"} if odd_field else {}
    odd = rt("request.start", time="0000-06-01T00:00:00Z", request_id="r2",
             span_id="b" * 16, **fields)
    logs = load_events([str(_write(tmp_path / "f.jsonl", [good[0], odd, good[1]]))])
    assert _reasons(logs) == {2: "invalid time"}
    assert list(logs.events["line"]) == [1, 3]


def test_json_nested_beyond_the_parsers_limit_is_a_bad_line_not_a_crash(tmp_path: Path) -> None:
    good = rt_request("a" * 16, "r1", 0, 1)
    lines: list[str | bytes] = [
        good[0], "[" * 100_000 + "]" * 100_000, '{"a":' * 5_000 + "1" + "}" * 5_000, good[1],
    ]
    logs = load_events([str(_write(tmp_path / "f.jsonl", lines))])
    assert logs.stats.lines == 4 and logs.stats.bad_lines == 2
    assert list(logs.events["line"]) == [1, 4]
    assert _reasons(logs) == {2: "JSON nested too deeply", 3: "JSON nested too deeply"}
    # Valid JSON not read: a record in it (an Unlinked error, DuckDB refusing the line for
    # a lone surrogate) was one bad line under the 1 %, and "No findings", exit 0.
    assert [note.reason for note in logs.stats.unreadable_files] == [NESTED_FILE]


def test_deep_brackets_that_do_not_pair_up_are_no_json(tmp_path: Path) -> None:
    # A torn line of 1,500 '[' hit the parser's limit as deep valid JSON
    # does: "JSON nested too deeply", and clean logs an incomplete read (exit 3).
    good = rt_request("a" * 16, "r1", 0, 1)
    lines: list[str | bytes] = [good[0], "[" * 1_500 + "x", "[" * 1_500 + "]" * 1_499, good[1]]
    logs = load_events([str(_write(tmp_path / "f.jsonl", lines))])
    assert _reasons(logs) == {2: "not JSON", 3: "not JSON"}
    assert logs.stats.unreadable_files == []
    # Brackets inside strings are text: a deep line that holds some is still valid JSON.
    deep = '{"a":' * 1_500 + '"]}]"' + "}" * 1_500
    logs = load_events([str(_write(tmp_path / "g.jsonl", [good[0], deep, good[1]]))])
    assert _reasons(logs) == {2: "JSON nested too deeply"}
    assert [note.reason for note in logs.stats.unreadable_files] == [NESTED_FILE]


def test_numeric_and_string_ids_mix(tmp_path: Path) -> None:
    lines = [
        rt("request.start", request_id=1, x_request_id=7, span_id="a" * 16, trace_id="t" * 32),
        rt("request.start", request_id="abc", span_id="b" * 16, trace_id="t" * 32),
        rt("request.end", request_id=2.5, span_id="c" * 16, status="200"),
    ]
    logs = load_events([str(_write(tmp_path / "f.jsonl", lines))])
    assert logs.stats.bad_lines == 0
    assert list(logs.events["request_id"]) == ["1", "abc", "2.5"]
    assert list(logs.events["x_request_id"].fillna("-")) == ["7", "-", "-"]


def test_bad_line_among_many_is_isolated(tmp_path: Path) -> None:
    lines: list[str | bytes] = []
    for i in range(400):
        lines += rt_request(f"{i + 1:016x}", f"r{i}", i, i + 0.5)
    lines[517] = '{"time": "2026-11-29T10:00:00Z", "schema": "ridtrace/1", "span_id": "x'
    logs = load_events([str(_write(tmp_path / "f.jsonl", lines))])
    assert logs.stats.bad_lines == 1
    assert _reasons(logs) == {518: "truncated JSON"}
    assert len(logs.events) == 799
    assert 518 not in set(logs.events["line"]) and 519 in set(logs.events["line"])


def test_long_lines_parse(tmp_path: Path) -> None:
    lines = [rt("request.start", request_id="r", user_agent="x" * 50_000), rt("request.end")]
    logs = load_events([str(_write(tmp_path / "f.jsonl", lines))])
    assert logs.stats.bad_lines == 0 and len(logs.events) == 2


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    logs = load_events([str(path)])
    assert logs.stats.lines == 0 and logs.events.empty


def test_missing_file_and_empty_glob() -> None:
    with pytest.raises(ForensicsInputError, match="no such file"):
        load_events(["/nonexistent/frontend.jsonl"])
    with pytest.raises(ForensicsInputError, match="no files match"):
        load_events(["/nonexistent/*.jsonl"])


def test_directory_of_mixed_files(tmp_path: Path) -> None:
    logs_dir = tmp_path / "logs"
    (logs_dir / "old").mkdir(parents=True)
    _write(logs_dir / "frontend.jsonl", rt_request("a" * 16, "r1", 0, 1))
    (logs_dir / "README.md").write_text("# notes\nnot a log\n")
    (logs_dir / "core.bin").write_bytes(bytes(range(256)) * 8)
    (logs_dir / "empty.log").write_bytes(b"")
    with gzip.open(logs_dir / "old" / "frontend.jsonl.1.gz", "wt") as fh:
        fh.write("\n".join(rt_request("b" * 16, "r2", 0, 1)) + "\n")
    logs = load_events([str(logs_dir)])
    assert len(logs.events) == 4
    assert logs.stats.bad_lines == 0
    assert sorted(Path(n.file).name for n in logs.stats.ignored_files) == ["README.md", "core.bin"]


def test_globs_and_gzip(tmp_path: Path) -> None:
    _write(tmp_path / "a.jsonl", rt_request("a" * 16, "r1", 0, 1))
    (tmp_path / "b.jsonl.gz").write_bytes(
        gzip.compress(("\n".join(rt_request("b" * 16, "r2", 0, 1)) + "\n").encode())
    )
    logs = load_events([str(tmp_path / "*.jsonl*")])
    assert len(logs.events) == 4 and logs.stats.files == 2


def test_corrupt_gzip_is_reported_not_fatal(tmp_path: Path) -> None:
    data = gzip.compress(("\n".join(rt_request("a" * 16, "r1", 0, 1)) + "\n").encode())
    (tmp_path / "cut.gz").write_bytes(data[: len(data) // 2])
    _write(tmp_path / "ok.jsonl", rt_request("b" * 16, "r2", 0, 1))
    logs = load_events([str(tmp_path / "cut.gz"), str(tmp_path / "ok.jsonl")])
    assert [Path(n.file).name for n in logs.stats.unreadable_files] == ["cut.gz"]
    assert "gzip stream truncated" in logs.stats.unreadable_files[0].reason
    assert len(logs.events) >= 2


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    data = ("\n".join(rt_request("a" * 16, "r1", 0, 1)) + "\n").encode()

    class FakeStdin:
        buffer = io.BufferedReader(io.BytesIO(data))  # type: ignore[arg-type]

    monkeypatch.setattr(sys, "stdin", FakeStdin)
    logs = load_events(["-"])
    assert len(logs.events) == 2
    assert list(logs.events["file"]) == ["<stdin>", "<stdin>"]


def test_dynamo_sample_normalised() -> None:
    logs = load_events([str(SAMPLE)])
    assert logs.stats.lines == 9 and logs.stats.bad_lines == 0
    ev = logs.events.set_index("line")
    assert ev.loc[1, "event"] == "deprecated_header"
    assert ev.loc[1, "deprecated"] == "x-dynamo-request-id"
    assert ev.loc[8, "deprecated"] == "request-id"
    assert ev.loc[3, "event"] == "worker.start" and ev.loc[3, "side"] == "worker"
    assert ev.loc[3, "parent_span_id"] == "a1b2c3d4e5f60718"
    assert ev.loc[5, "outcome"] == "ok"
    assert ev.loc[6, "status"] == "200"
    assert ev.loc[7, "event"] == "response.unlinked"


def test_lean_and_full_reads_agree_on_ids(tmp_path: Path) -> None:
    lean = load_events([str(SAMPLE)], lean=True).events
    full = load_events([str(SAMPLE)], lean=False).events
    for col in ("request_id", "span_id", "event", "deprecated"):
        assert list(lean[col].astype(object)) == list(full[col].astype(object))
    assert full["method"].notna().any() and lean["method"].isna().all()


def test_report_times_keep_a_four_digit_year() -> None:
    from datetime import datetime

    from ridtrace.forensics.rfc3339 import rfc3339_us

    zero = datetime(1, 1, 1, tzinfo=UTC)  # Go's zero time, as some services log it
    assert rfc3339_us(zero) == "0001-01-01T00:00:00.000000Z"
    assert rfc3339_us(datetime(2026, 11, 29, 10, 0, 1, 5, tzinfo=UTC)) == (
        "2026-11-29T10:00:01.000005Z")
