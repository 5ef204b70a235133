"""UTF-16 logs, as Windows PowerShell's ``>`` and ``Out-File`` write them: read as the
same lines in UTF-8 (every line was "binary data", exit 3)."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import pytest

from ridtrace.forensics.reading.judge import judge_line
from ridtrace.testing.synth import SynthSpec, write_logs
from tests.cli.conftest import PlainReport
from tests.cli.helpers import analyze_json
from tests.support.extras import ENGINES


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("plain")
    write_logs(folder, SynthSpec(requests=60))
    return folder


ENCODINGS = {
    "utf-16 (BOM, little-endian)": lambda text: b"\xff\xfe" + text.encode("utf-16-le"),
    "utf-16 (BOM, big-endian)": lambda text: b"\xfe\xff" + text.encode("utf-16-be"),
    "utf-16-le without a BOM": lambda text: text.encode("utf-16-le"),
    "utf-16-be without a BOM": lambda text: text.encode("utf-16-be"),
    "utf-16, gzipped": lambda text: gzip.compress(text.encode("utf-16")),
    # PowerShell's `Out-File -Encoding utf32`: its mark starts as UTF-16's does.
    "utf-32 (BOM, little-endian)": lambda text: b"\xff\xfe\x00\x00" + text.encode("utf-32-le"),
    "utf-32 (BOM, big-endian)": lambda text: b"\x00\x00\xfe\xff" + text.encode("utf-32-be"),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
def test_utf16_logs_give_the_utf8_report(
    plain: Path, plain_report: PlainReport, tmp_path: Path, encoding: str, engine: str
) -> None:
    # An accented id survives the transcoding.
    _encoded_copies(plain, tmp_path, encoding, lambda text: text.replace(
        '"x_request_id":"27"', '"x_request_id":"é27"'))
    assert _same_report(tmp_path, engine, plain_report) == 1


def _encoded_copies(plain: Path, into: Path, encoding: str,
                    edit: Callable[[str], str] = str, cut: int = 0) -> None:
    """Each plain log copied into `into` in `encoding`, its text edited by `edit`, its
    lines ended CRLF (as Windows tools end them), its last `cut` bytes left out (of the
    decompressed text, when gzipped)."""
    for path in plain.iterdir():
        encoded = ENCODINGS[encoding](edit(path.read_text()).replace("\n", "\r\n"))
        if cut and encoding.endswith("gzipped"):
            encoded = gzip.compress(gzip.decompress(encoded)[:-cut])
        elif cut:
            encoded = encoded[:-cut]
        (into / path.name).write_bytes(encoded)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
def test_a_wide_log_cut_inside_its_last_newline_keeps_its_last_record(
    plain: Path, plain_report: PlainReport, tmp_path: Path, encoding: str, engine: str
) -> None:
    # A copy cut at an odd byte: the last record is whole, its newline's code unit is
    # not. Decoded as U+FFFD on the record's line, the record was a bad line "truncated
    # JSON" under the 1 % rule, its finding lost in a run said to be complete.
    _encoded_copies(plain, tmp_path, encoding, cut=1)
    assert _same_report(tmp_path, engine, plain_report) == 1


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
def test_a_wide_log_cut_inside_the_cr_of_its_last_crlf_keeps_its_last_record(
    plain: Path, plain_report: PlainReport, tmp_path: Path, encoding: str,
) -> None:
    # The newline's code unit gone and one byte of the CR's: only a torn newline was
    # taken for the line's end, and PowerShell's CRLF log lost its last record so.
    unit = 4 if "utf-32" in encoding else 2
    _encoded_copies(plain, tmp_path, encoding, cut=unit + 1)
    assert _same_report(tmp_path, "pandas", plain_report) == 1


def _same_report(folder: Path, engine: str, plain_report: PlainReport) -> int:
    """Check `folder`'s report against the plain logs' (no bad line, the same lines and
    findings, cited at the same lines); its exit code."""
    want_code, want = plain_report
    code, got = analyze_json(str(folder), "--engine", engine)
    assert got["summary"]["bad_lines"] == 0, got["summary"]["bad_line_samples"]
    assert got["summary"]["lines"] == want["summary"]["lines"]
    assert [(f["kind"], f["span_id"], f["evidence"][0]["line"]) for f in got["findings"]] == [
        (f["kind"], f["span_id"], f["evidence"][0]["line"]) for f in want["findings"]
    ]
    assert code == want_code
    return code


def test_a_utf16_line_read_as_bytes_says_so() -> None:
    # --follow reads bytes as they are: the reason names the encoding, not "binary data".
    line = '{"time":"2026-11-29T10:00:00Z","schema":"ridtrace/1"}'.encode("utf-16-le")
    assert judge_line(b"\x00" + line, ("time",)) == "UTF-16 text, not UTF-8"
    assert judge_line(line[:-1], ("time",)) == "UTF-16 text, not UTF-8"
    assert judge_line(line.decode("utf-16-le").encode("utf-16-be"), ("time",)) == (
        "UTF-16 text, not UTF-8")
    wide = line.decode("utf-16-le").encode("utf-32-le")
    assert judge_line(b"\x00\x00\x00" + wide, ("time",)) == "UTF-32 text, not UTF-8"
    assert judge_line(wide.decode("utf-32-le").encode("utf-32-be"), ("time",)) == (
        "UTF-32 text, not UTF-8")
    assert judge_line(b"\x00\x01\x02binary\xff", ("time",)) == "binary data"


BOM = b"\xef\xbb\xbf"
APPENDED = {
    # A log PowerShell's `>` started, then a service appended to in UTF-8.
    "utf-16, then utf-8": lambda a, b: a.encode("utf-16") + b.encode("utf-8"),
    "utf-16, then utf-8 with its BOM": lambda a, b: a.encode("utf-16") + BOM + b.encode(),
    "utf-16-be, then utf-8": lambda a, b: b"\xfe\xff" + a.encode("utf-16-be") + b.encode(),
    "utf-16, then utf-16-be with its BOM":
        lambda a, b: a.encode("utf-16") + b"\xfe\xff" + b.encode("utf-16-be"),
    "utf-32, then utf-8": lambda a, b: a.encode("utf-32") + b.encode("utf-8"),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("encodings", sorted(APPENDED))
def test_a_log_whose_encoding_changes_at_a_line_gives_the_utf8_report(
    plain: Path, plain_report: PlainReport, tmp_path: Path, encodings: str, engine: str
) -> None:
    # Decoded on as its first encoding, the rest of the file was one line of garbage:
    # one bad line under the 1 % rule, its records (and findings) unread, exit 0.
    for path in plain.iterdir():
        lines = path.read_text().splitlines(keepends=True)
        half = len(lines) // 2
        (tmp_path / path.name).write_bytes(
            APPENDED[encodings]("".join(lines[:half]), "".join(lines[half:])))
    _same_report(tmp_path, engine, plain_report)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("mark", ["utf-16-be", "utf-16-le", "utf-32-le"])
def test_a_wide_mark_alone_before_utf8_lines_is_one_bad_line(
    plain: Path, plain_report: PlainReport, tmp_path: Path, mark: str, engine: str
) -> None:
    # A log PowerShell created with its mark alone, then appended to by a UTF-8 service:
    # read as UTF-16, the whole file was one garbage line, its records unread, exit 0.
    marks = {"utf-16-be": b"\xfe\xff", "utf-16-le": b"\xff\xfe",
             "utf-32-le": b"\xff\xfe\x00\x00"}
    for path in plain.iterdir():
        (tmp_path / path.name).write_bytes(marks[mark] + b"\n" + path.read_bytes())
    want_code, want = plain_report
    code, got = analyze_json(str(tmp_path), "--engine", engine)
    files = len(list(plain.iterdir()))
    assert got["summary"]["bad_lines"] == files  # each file's mark, a line of its own
    assert got["summary"]["lines"] == want["summary"]["lines"] + files
    assert [f["kind"] for f in got["findings"]] == [f["kind"] for f in want["findings"]]
    assert code == want_code  # error findings: 1, whatever the bad lines
