"""A client's id with terminal control sequences is shown, never obeyed.

An ESC sequence recolours or clears the reader's terminal, an OSC one retitles its
window, a CR or newline rewrites the report's lines: ids are the clients' text.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.follow import table_line
from ridtrace.cli.main import main
from tests.forensics.helpers import rt_request
from tests.support.follower import start_follower
from tests.support.inprocess_cli import run_in_process

HOSTILE = "\x1b[31mRED\x1b[0m\x1b]0;pwned\x07\rover\nline\x9b\u202egnp.exe"
CONTROLS = [chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0), 0x202E) if chr(c) != "\n"]


def _logs(tmp_path: Path) -> Path:
    lines = rt_request("a" * 16, HOSTILE, 0, 2) + rt_request("b" * 16, HOSTILE, 1, 3)
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path / "frontend.jsonl"


def _no_controls(text: str) -> None:
    assert not [c for c in text if c in CONTROLS], repr(text)
    assert "pwned" in text  # the id is still there to read


def test_analyze_table_and_csv_show_control_characters(tmp_path: Path) -> None:
    log = _logs(tmp_path)
    table = CliRunner().invoke(main, ["analyze", str(log)])
    assert table.exit_code == 1
    _no_controls(table.stdout)
    assert "RED" in table.stdout and "pwned" in table.stdout
    out = tmp_path / "report.csv"
    to_file = CliRunner().invoke(main, ["analyze", str(log), "--format", "csv", "-o", str(out)])
    to_stdout = CliRunner().invoke(main, ["analyze", str(log), "--format", "csv"])
    assert to_file.exit_code == to_stdout.exit_code == 1
    assert out.read_text() == to_stdout.stdout  # the same bytes wherever it goes
    _no_controls(out.read_text().replace("\n", ""))
    # JSON keeps the id as logged: JSON escapes control characters itself.
    doc = json.loads(CliRunner().invoke(main, ["analyze", str(log), "--format", "json"]).stdout)
    assert {f["request_id"] for f in doc["findings"]} == {HOSTILE}


def test_trace_and_follow_lines_show_control_characters(tmp_path: Path) -> None:
    log = _logs(tmp_path)
    trace = CliRunner().invoke(main, ["trace", HOSTILE, str(log)])
    assert "matching request" in trace.stdout, trace.output
    _no_controls(trace.stdout)
    line = table_line({"time": "t", "kind": "duplicate_in_flight", "request_id": HOSTILE,
                       "x_request_id": None, "evidence": [{"file": "f\x1b", "line": 1}]})
    _no_controls(line)
    assert "\n" not in line


# Invisible in a terminal: zero-width space, joiner and non-joiner, word joiner, byte-order
# mark, soft hyphen, Mongolian vowel separator, a tag character, line and paragraph
# separators; and the default-ignorable characters of other categories (a combining
# grapheme joiner, Hangul fillers, variation selectors) and the blank braille pattern.
# "rollout-7" and "rollout-7\u200b" are two clients' ids that printed alike.
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e",
             "\U000e0041", "\u2028", "\u2029", "\u034f", "\u115f", "\u3164", "\ufe0f",
             "\U000e0100", "\u2800"]


def test_invisible_characters_in_ids_are_shown_not_hidden(tmp_path: Path) -> None:
    sneaky = "rollout-7" + "".join(INVISIBLE)
    lines = rt_request("a" * 16, sneaky, 0, 2) + rt_request("b" * 16, sneaky, 1, 3)
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    for args in (["trace", sneaky], ["analyze"], ["analyze", "--format", "csv"]):
        result = CliRunner().invoke(main, [*args, str(tmp_path)])
        assert "rollout-7" in result.stdout, result.output
        assert not [c for c in result.stdout if c in INVISIBLE], (args, result.stdout)
        # CSV is data: each one is its escape, as in JSON (test_csv_bidi_escapes.py).
        shown = [f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}"
                 for c in INVISIBLE] if "csv" in args else ["\ufffd"] * len(INVISIBLE)
        assert "rollout-7" + "".join(shown) in result.stdout


def test_json_reports_keep_every_character_escaped_where_a_terminal_would_obey_it(
    tmp_path: Path,
) -> None:
    # JSON escapes C0 only: C1 (a CSI on some terminals), bidi overrides and zero-width
    # characters went to the terminal raw with --format json.
    sneaky = HOSTILE + "\x7f" + "".join(INVISIBLE)
    lines = rt_request("a" * 16, sneaky, 0, 2) + rt_request("b" * 16, sneaky, 1, 3)
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    text = CliRunner().invoke(main, ["analyze", str(tmp_path), "--format", "json"]).stdout
    assert not [c for c in text if c in CONTROLS + INVISIBLE and c != "\n"], repr(text[:200])
    assert {f["request_id"] for f in json.loads(text)["findings"]} == {sneaky}


def test_json_escapes_every_character_the_table_would_not_show(tmp_path: Path) -> None:
    # json_escaped listed some format characters only: an invisible musical-notation
    # format character, an Arabic number sign and an unassigned code point were shown as
    # U+FFFD in the table and went raw to the terminal in --format json, so two ids that
    # the table tells apart printed alike there.
    from ridtrace.forensics.printable import visible

    hidden = "\U0001d173\u0600\u06dd\ufff0\U000e0001\u00ad"
    sneaky = "rollout-7" + hidden
    lines = rt_request("a" * 16, sneaky, 0, 2) + rt_request("b" * 16, sneaky, 1, 3)
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    text = CliRunner().invoke(main, ["analyze", str(tmp_path), "--format", "json"]).stdout
    assert not [c for c in text if c in hidden], repr(text[:300])
    assert visible(sneaky) == "rollout-7" + "\ufffd" * len(hidden)
    assert {f["request_id"] for f in json.loads(text)["findings"]} == {sneaky}


def _log_dir_with_a_hostile_file_name(tmp_path: Path) -> Path:
    """A log beside a file of no log lines whose name holds control sequences (an
    incident bundle's names are whoever made it's text): the input is incomplete, and
    the reason names that file."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "frontend.jsonl").write_text("\n".join(rt_request("c" * 16, "ok-id", 0, 2)) + "\n")
    (logs / "app\x1b]0;pwned\x07\x1b[2J\x9b.jsonl").write_text("not json\nnot json either\n")
    return logs


def test_the_incomplete_input_warning_shows_file_names_control_characters(
    tmp_path: Path
) -> None:
    logs = _log_dir_with_a_hostile_file_name(tmp_path)
    jaeger = tmp_path / "traces.json"
    for argv in (["analyze", str(logs)], ["audit", str(logs)], ["trace", "ok-id", str(logs)],
                 ["export", "jaeger", str(logs), "-o", str(jaeger)]):
        _, _, stderr = run_in_process(argv)
        assert "input incomplete" in stderr, (argv, stderr)
        _no_controls(stderr.replace("\n", ""))


def test_the_follow_summary_shows_file_names_control_characters(tmp_path: Path) -> None:
    logs = _log_dir_with_a_hostile_file_name(tmp_path)
    follower = start_follower([str(logs)], "--from-start", fmt="table")
    follower.stop()
    summary = "".join(p.text for p in follower.stdout)
    assert "incomplete:" in summary, summary
    _no_controls(summary)
