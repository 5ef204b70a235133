"""Wrapped logs joined with ``cat`` after a Windows tool wrote one part: PowerShell's
``kubectl logs --timestamps pod | Out-File -Encoding utf8`` (Windows PowerShell 5.1
writes UTF-8 with a byte-order mark) then ``cat a.log b.log``. The mark opens the first
line of the second part; it hid that line's wrapper, so its record was one bad line
under the 1 % a read may have, and an Unlinked error there was dropped without a word."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import PlainReport
from tests.cli.helpers import analyze_json
from tests.forensics.helpers import followed_summary

BOM = b"\xef\xbb\xbf"
STAMP = b"2026-11-29T10:00:00.123456789Z "


def _kubectl(lines: list[bytes]) -> bytes:
    return b"".join(STAMP + line + b"\n" for line in lines)


def _journal_seq(lines: list[bytes]) -> bytes:
    return b"".join(b"\x1e" + json.dumps({"__CURSOR": f"s=1;i={n}", "_PID": "42",
                                          "MESSAGE": line.decode()}).encode() + b"\n"
                    for n, line in enumerate(lines))


def _plain(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


# (how the first part was written, how the second) — the second always with the mark.
JOINS: dict[str, tuple[Callable[[list[bytes]], bytes], Callable[[list[bytes]], bytes]]] = {
    "kubectl then kubectl": (_kubectl, _kubectl),
    "plain then kubectl": (_plain, _kubectl),
    "plain then journal json-seq": (_plain, _journal_seq),
}


def _joined(plain: Path, into: Path, join: str) -> Path:
    """`plain`'s logs, the frontend's cut before its first Unlinked error line and the
    part from there on written with a byte-order mark."""
    first, second = JOINS[join]
    into.mkdir()
    for path in plain.iterdir():
        lines = path.read_bytes().splitlines()
        cut = next((n for n, line in enumerate(lines) if b"Unlinked" in line), None)
        (into / path.name).write_bytes(first(lines) if cut is None
                                       else first(lines[:cut]) + BOM + second(lines[cut:]))
    return into


@pytest.mark.parametrize("join", sorted(JOINS))
def test_a_record_after_a_byte_order_mark_is_read_in_its_wrapper(
    plain: Path, plain_report: PlainReport, tmp_path: Path, join: str
) -> None:
    joined = _joined(plain, tmp_path / "logs", join)
    want_code, want = plain_report
    code, got = analyze_json(str(joined))
    assert got["summary"]["bad_line_samples"] == []
    assert [(f["kind"], f["span_id"]) for f in got["findings"]] == [
        (f["kind"], f["span_id"]) for f in want["findings"]]
    assert code == want_code == 1


def test_follow_reads_a_record_after_a_byte_order_mark(plain: Path, tmp_path: Path) -> None:
    summary = followed_summary(_joined(plain, tmp_path / "logs", "kubectl then kubectl"))
    assert summary["bad_lines"] == 0, summary["bad_line_samples"]
    assert summary["lines"] == sum(len(p.read_bytes().splitlines()) for p in plain.iterdir())
