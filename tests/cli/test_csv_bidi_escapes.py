"""`ridtrace trace --format csv` keeps a client's bidi control recoverable, yet inert.

A bidirectional control (U+202E RIGHT-TO-LEFT OVERRIDE) in a client's id was written as
U+FFFD: the value was lost (two clients' ids differing only there were one in the CSV,
and the cell matched neither id as logged). Raw, it would reorder the cell in a terminal
or a spreadsheet. It is now its ``\\uXXXX`` escape, as JSON output writes it, a backslash
doubled only where it would read as an escape (docs/cli.md).
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from tests.forensics.helpers import rt_request
from tests.support.inprocess_cli import run_in_process

# A bidi override, an isolate, a tag character (outside the BMP), a backslash before
# what reads as an escape, one before an escaped character, and a Windows-style path.
CLIENT_ID = "ord\u202eer-7\u2066x\U000e0041 lit\\u202e \\\u202e C:\\Users\\logs"
_ESCAPE = re.compile(r"\\(\\|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})")


def _unescaped(cell: str) -> str:
    """The documented reading: ``\\\\`` one backslash, ``\\uXXXX`` / ``\\UXXXXXXXX`` one
    character, any other backslash itself."""
    return _ESCAPE.sub(lambda m: "\\" if m[1] == "\\" else chr(int(m[1][1:], 16)), cell)


def test_trace_csv_writes_a_bidi_control_as_its_escape(tmp_path: Path) -> None:
    (tmp_path / "frontend.jsonl").write_text(
        "\n".join(rt_request("a" * 16, "r-1", 0, 2, xrid=CLIENT_ID)) + "\n")
    # In-process: CliRunner decodes the output as UTF-8, a byte it cannot as U+FFFD,
    # which the check below finds.
    code, text, stderr = run_in_process(["trace", "r-1", str(tmp_path), "--format", "csv"])
    assert code == 0, stderr
    assert not [c for c in text if c in "\u202e\u2066\U000e0041\ufffd"], ascii(text)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 2
    cell = rows[0]["x_request_id"]
    assert cell == ("ord\\u202eer-7\\u2066x\\U000e0041 lit\\\\u202e \\\\\\u202e "
                    "C:\\Users\\logs")
    assert _unescaped(cell) == CLIENT_ID


def test_analyze_csv_evidence_splits_back_when_a_file_name_holds_a_semicolon(
    tmp_path: Path
) -> None:
    # Evidence is `file:line;file:line`: a log named `front;end:9.jsonl` made the cell
    # `front;end:9.jsonl:24;…`, which no script could split back into files and lines.
    # A `;` in a name is its escape now; the line is after the last `:`.
    logs = tmp_path / "logs"
    logs.mkdir()
    name = "front;end:9 \\u003b.jsonl"  # and a backslash that would read as an escape
    lines = rt_request("a" * 16, "dup", 0, 2, xrid="dup") + rt_request("b" * 16, "dup", 1, 3,
                                                                       xrid="dup")
    (logs / name).write_text("\n".join(lines) + "\n")
    code, text, stderr = run_in_process(["analyze", str(logs), "--format", "csv", "-q"])
    assert code == 1, stderr
    (row,) = [r for r in csv.DictReader(io.StringIO(text)) if r["kind"] == "duplicate_in_flight"]
    cited = [part.rpartition(":") for part in row["evidence"].split(";")]
    assert {_unescaped(file) for file, _, _ in cited} == {str(logs / name)}
    assert sorted(int(line) for _, _, line in cited) == [1, 2, 3, 4]
