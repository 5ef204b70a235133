"""Lines of logs ridtrace does not read say what they are, not only "not JSON" or
"invalid time": a log in epoch times, a service logging text."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main


def test_an_epoch_number_time_names_itself(tmp_path: Path) -> None:
    log = tmp_path / "app.jsonl"
    log.write_text("".join(
        json.dumps({"time": t, "schema": "ridtrace/1", "message": "m"}) + "\n"
        for t in (1796205600.25, 1796205600250, "2026-11-29T10:00:00Z",
                  # as text: said only "invalid time"
                  "1796205600250", "1796205600.25", "yesterday")
    ))
    result = CliRunner().invoke(main, ["analyze", str(log), "--format", "json", "-q"])
    samples = json.loads(result.stdout)["summary"]["bad_line_samples"]
    assert [(s["line"], s["reason"]) for s in samples] == [
        (1, "invalid time (an epoch number; RFC 3339 text expected)"),
        (2, "invalid time (an epoch number; RFC 3339 text expected)"),
        (4, "invalid time (an epoch number; RFC 3339 text expected)"),
        (5, "invalid time (an epoch number; RFC 3339 text expected)"),
        (6, "invalid time"),
    ]
    assert result.exit_code == 3


def test_a_text_log_says_it_is_one_and_how_dynamo_writes_json(tmp_path: Path) -> None:
    # Dynamo's default (READABLE) format, as its docs show it; then a JSON line.
    log = tmp_path / "worker.log"
    log.write_text(
        "2025-09-02T15:50:01.770028Z  INFO main.init: VllmWorker has been initialized\n"
        "Traceback (most recent call last):\n"
        + json.dumps({"time": "2026-11-29T10:00:00Z", "target": "log", "message": "m"})
        + "\n"
    )
    result = CliRunner().invoke(main, ["analyze", str(log), "--format", "json", "-q"])
    samples = json.loads(result.stdout)["summary"]["bad_line_samples"]
    assert [(s["line"], s["reason"]) for s in samples] == [
        (1, "a text log line, not JSON (Dynamo writes JSON lines with DYN_LOGGING_JSONL=1)"),
        (2, "not JSON"),
    ]


_DYNAMO_LINE = json.dumps({
    "time": "2026-10-02T14:05:02.110377Z", "level": "ERROR", "target": "dynamo_llm::http",
    "message": "engine generate call failed", "request_id": "1", "span_id": "5c20cc08e6afb2b7",
    "trace_id": "b672ccf48683b392891c5cb4163d4b51",
    "error": "Unlinked response; response task was dropped or cancelled",
})
# `journalctl -u dynamo > messages` (its default output, after its first line), rsyslog's
# /var/log/syslog, and `journalctl -o export`: the records whole, behind text.
_PREFIXED = [
    "-- Logs begin at Fri 2026-10-02 14:00:00 UTC, end at Fri 2026-10-02 14:10:00 UTC. --",
    f"Oct 02 14:05:02 gpu-3 dynamo[4242]: {_DYNAMO_LINE}",
    f"2026-10-02T14:05:02+0000 n3 dynamo[42]: {_DYNAMO_LINE}",
    f"Fri 2026-10-02 14:05:02 UTC n3 dynamo[42]: {_DYNAMO_LINE}",  # journalctl -o short-full
    f"1790949902.110377 n3 dynamo[42]: {_DYNAMO_LINE}",  # journalctl -o short-unix
    f"MESSAGE={_DYNAMO_LINE}",
]


def test_records_behind_a_syslog_prefix_are_read_and_an_unknown_prefix_says_so(
    tmp_path: Path,
) -> None:
    # Not named like a log and with no line that is a JSON object, such a file was
    # ignored by a walk as "no JSON lines in its first lines": the walk said complete
    # and clean (exit 0) on an Unlinked error it never read. Then its lines were bad
    # ones, the read incomplete with no finding: syslog's prefix is taken off now, as
    # kubectl's is; journalctl's own first line is no line; a prefix the read does not
    # know still says what it is.
    (tmp_path / "messages").write_text("".join(line + "\n" for line in _PREFIXED))
    result = CliRunner().invoke(main, ["analyze", str(tmp_path), "--format", "json", "-q"])
    summary = json.loads(result.stdout)["summary"]
    assert summary["ignored_files"] == []
    assert [(s["line"], s["reason"]) for s in summary["bad_line_samples"]] == [
        (6, "a JSON record after a text prefix ridtrace does not take off (journalctl -o "
            "export? journalctl -o json is read as it is)")
    ]
    assert (summary["lines"], summary["unlinked"]) == (5, 1)
    assert result.exit_code == 1


def test_an_unknown_prefix_is_not_sent_to_journalctl(tmp_path: Path) -> None:
    # A shipper's prefix of its own (here "ship:42>> ") was told
    # to try `journalctl -o export`, a tool it never came from.
    (tmp_path / "frontend.log").write_text(f"ship:42>> {_DYNAMO_LINE}\n")
    result = CliRunner().invoke(
        main, ["analyze", str(tmp_path / "frontend.log"), "--format", "json", "-q"]
    )
    summary = json.loads(result.stdout)["summary"]
    assert [(s["line"], s["reason"]) for s in summary["bad_line_samples"]] == [
        (1, "a JSON record after a text prefix ridtrace does not take off")
    ]
    assert result.exit_code == 3


def test_a_journal_exported_as_json_pretty_says_how_to_export_it(tmp_path: Path) -> None:
    # `journalctl -o json-pretty`: an entry over many lines, a field a line, as systemd
    # writes it. Every line said "not JSON" (or "truncated JSON"), the export that is
    # read as it is (-o json) never named.
    record = json.dumps({"time": "2026-11-29T10:00:00Z", "schema": "ridtrace/1", "message": "m"})
    entry = {"__CURSOR": "s=1;i=1", "__REALTIME_TIMESTAMP": "1796205600000000",
             "_PID": "42", "MESSAGE": record}
    log = tmp_path / "frontend.json"
    log.write_text("{\n" + ",\n".join(f"\t{json.dumps(k)} : {json.dumps(v)}"
                                       for k, v in entry.items()) + "\n}\n")
    result = CliRunner().invoke(main, ["analyze", str(log), "--format", "json", "-q"])
    samples = json.loads(result.stdout)["summary"]["bad_line_samples"]
    pretty = ("a journal entry's field on a line of its own (journalctl -o json-pretty? "
              "journalctl -o json is read as it is)")
    assert [s["reason"] for s in samples if s["line"] in (2, 5)] == [pretty, pretty]
    assert result.exit_code == 3


def test_valid_json_whose_message_has_a_few_words_is_never_not_json(tmp_path: Path) -> None:
    # The message field of a line of no known format was taken for a shipped line, its
    # first words for stern's pod and container names, and the line judged by the last
    # word: "not JSON", for a valid JSON line.
    log = tmp_path / "app.log"
    log.write_text("".join(json.dumps(line) + "\n" for line in (
        {"message": "sync handler done x", "request_id": "r1"},
        {"log": "worker pool started now", "pid": 7},
        {"message": "hello", "request_id": "r1"},
    )))
    result = CliRunner().invoke(main, ["analyze", str(log), "--format", "json", "-q"])
    samples = json.loads(result.stdout)["summary"]["bad_line_samples"]
    assert [(s["line"], s["reason"]) for s in samples] == [
        (1, "missing time"), (2, "missing time"), (3, "missing time")]
