"""A report ridtrace wrote beside the logs, under a log's name, is no log.

`ridtrace analyze logs -o logs/report.log` then `ridtrace analyze logs`: a file named
for lines is always read, so the report was read as a log, every line of it bad: the
clean folder's next run exited 3, and `-o logs/report.log` again was refused ("one of
the logs read"). Each batch command's output is known by its first lines, as the
follower's findings already were, whatever its name.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.testing.synth import SynthSpec, write_logs


def _run(*args: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(main, list(args))
    return done.exit_code, done.stdout, done.stderr


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    logs = tmp_path / "logs"
    write_logs(logs, SynthSpec(requests=30, crossed=0, collisions=0, duplicates=0,
                               client_reuse=0, deprecated_every=10))
    return logs


def test_each_commands_report_saved_under_a_logs_name_is_passed_over(clean: Path) -> None:
    request_id = json.loads(next(
        line for line in (clean / "frontend.jsonl").read_text().splitlines()
        if '"request.start"' in line))["request_id"]
    writes = [
        ["analyze", str(clean), "-q", "-o", str(clean / "report.log")],
        ["analyze", str(clean), "-q", "--format", "json", "-o", str(clean / "report.jsonl")],
        ["analyze", str(clean), "-q", "--format", "csv", "-o", str(clean / "report.csv.log")],
        ["trace", request_id, str(clean), "-q", "-o", str(clean / "trace.log")],
        ["trace", request_id, str(clean), "-q", "--format", "json", "-o", str(clean / "trace.jsonl")],
        ["trace", request_id, str(clean), "-q", "--format", "csv", "-o", str(clean / "trace.csv.log")],
        ["audit", str(clean), "-q", "-o", str(clean / "audit.log")],
        ["audit", str(clean), "-q", "--by", "day", "--format", "csv", "-o", str(clean / "audit.1")],
        ["audit", str(clean), "-q", "--format", "json", "-o", str(clean / "audit.ndjson")],
        ["export", "jaeger", str(clean), "-q", "-o", str(clean / "traces.jsonl")],
    ]
    for args in writes:
        code, _, err = _run(*args)
        assert code == 0, (args, err)
    code, out, err = _run("analyze", str(clean), "--format", "json")
    summary = json.loads(out)["summary"]
    assert code == 0 and summary["bad_lines"] == 0 and not summary["incomplete"], err
    passed_over = {Path(note["file"]).name for note in summary["ignored_files"]}
    assert passed_over == {Path(args[-1]).name for args in writes}
    # Refreshed in place, as any earlier report beside the logs is.
    assert _run("analyze", str(clean), "-q", "-o", str(clean / "report.log"))[0] == 0


@pytest.mark.parametrize("agent", [
    "curl/8.5: 1 matching request(s), 1 shown",
    "curl/8.5: 1 matching request(s), 1 shown, most relevant first",
])
def test_a_log_whose_first_line_quotes_a_reports_words_is_read(
    tmp_path: Path, agent: str,
) -> None:
    # A client's User-Agent is logged as sent: on a log's first line (the one after a
    # rotation) these words had the whole file passed over as trace's text report.
    logs = tmp_path / "logs"
    write_logs(logs, SynthSpec(requests=60))
    code, out, _ = _run("analyze", str(logs), "--format", "json")
    assert code == 1
    findings = json.loads(out)["findings"]
    assert {f["kind"] for f in findings} >= {"crossed_stream", "duplicate_in_flight"}
    front = logs / "frontend.jsonl"
    lines = front.read_text().splitlines(keepends=True)
    first = json.loads(lines[0])
    first["user_agent"] = agent
    front.write_text(json.dumps(first) + "\n" + "".join(lines[1:]))
    code, out, err = _run("analyze", str(logs), "--format", "json")
    report = json.loads(out)
    assert not report["summary"]["ignored_files"], err
    assert code == 1 and report["findings"] == findings


@pytest.mark.parametrize("columns", ["40", "60", "80"])
def test_a_trace_report_whose_heading_wraps_is_passed_over(clean: Path, columns: str) -> None:
    # A long ID (a chatcmpl-<uuid>) on a narrow terminal puts the heading's ID on a line
    # of its own: the report, saved beside the logs, was read as 22-43 bad lines.
    front = clean / "frontend.jsonl"
    lines = front.read_text().splitlines(keepends=True)
    long_id = "chatcmpl-" + "0123abcd-" * 5 + "e"
    first = json.loads(lines[0])
    front.write_text("".join(line.replace(first["request_id"], long_id) for line in lines))
    done = CliRunner().invoke(main, ["trace", long_id, str(clean), "-q", "-o",
                                     str(clean / "trace.log")], env={"COLUMNS": columns})
    assert done.exit_code == 0, done.stderr
    heading = (clean / "trace.log").read_text().splitlines()
    assert heading[1].startswith(("1 matching", "abcd")), heading[:3]  # wrapped
    code, out, err = _run("analyze", str(clean), "--format", "json")
    summary = json.loads(out)["summary"]
    assert code == 0 and summary["bad_lines"] == 0 and not summary["incomplete"], err
    assert [Path(n["file"]).name for n in summary["ignored_files"]] == ["trace.log"]


def test_an_audit_that_saw_no_deprecated_header_saved_beside_the_logs_is_passed_over(
    tmp_path: Path,
) -> None:
    # Its title says "(none seen)": read back as a log, its lines were bad ones, the
    # clean folder exit 3, and the same audit refused to write its report again.
    logs = tmp_path / "logs"
    write_logs(logs, SynthSpec(requests=30, crossed=0, collisions=0, duplicates=0,
                               client_reuse=0, deprecated_every=0))
    for by in ("header", "day"):
        assert _run("audit", str(logs), "-q", "--by", by, "-o", str(logs / "audit.log"))[0] == 0
        code, out, err = _run("analyze", str(logs), "--format", "json")
        summary = json.loads(out)["summary"]
        assert (code, summary["bad_lines"]) == (0, 0), err
        assert [Path(n["file"]).name for n in summary["ignored_files"]] == ["audit.log"]
