"""CloudWatch Logs fetched with ``aws logs filter-log-events`` (or ``get-log-events``) and
the AWS CLI's default ``--output json``: one indented document, each event's line in its
``message``. Every line of it was a bad one, "none of its lines is a log record", with
no request read; each event's line is read now, cited at its ``message`` line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import PlainReport
from tests.cli.helpers import analyze_json
from tests.forensics.helpers import followed_summary
from tests.support.extras import ENGINES


def _filter_log_events(lines: list[bytes], stream: str) -> bytes:
    """The AWS CLI's JSON output of ``aws logs filter-log-events``: indented by four."""
    events = [{"logStreamName": stream, "timestamp": 1796205600000 + n,
               "message": line.decode(), "ingestionTime": 1796205600500 + n,
               "eventId": f"{37000000000000000000 + n}"} for n, line in enumerate(lines)]
    return json.dumps({"events": events, "searchedLogStreams": [
        {"logStreamName": stream, "searchedCompletely": True}]}, indent=4).encode() + b"\n"


@pytest.mark.parametrize("engine", ENGINES)
def test_the_events_of_an_aws_logs_document_are_read(
    plain: Path, plain_report: PlainReport, tmp_path: Path, engine: str
) -> None:
    fetched = tmp_path / "fetched"
    fetched.mkdir()
    for path in plain.iterdir():  # named as such a fetch is saved: a .json document
        (fetched / f"{path.stem}.json").write_bytes(
            _filter_log_events(path.read_bytes().splitlines(), f"ecs/{path.stem}/4f1e"))
    want_code, want = plain_report
    code, got = analyze_json(str(fetched), "--engine", engine)
    assert got["summary"]["bad_line_samples"] == []
    assert got["summary"]["ignored_files"] == []
    assert [(f["kind"], f["span_id"], f["detail"]) for f in got["findings"]] == [
        (f["kind"], f["span_id"], f["detail"]) for f in want["findings"]]
    assert (got["summary"]["requests"], got["summary"]["lines"]) == (
        want["summary"]["requests"], want["summary"]["lines"])
    assert code == want_code == 1
    for finding in got["findings"]:
        for ev in finding["evidence"]:
            cited = Path(ev["file"]).read_bytes().split(b"\n")[ev["line"] - 1]
            assert cited.lstrip().startswith(b'"message": "{')


def test_an_events_text_is_a_bad_line_the_others_read(tmp_path: Path) -> None:
    record = {"time": "2026-11-29T10:00:00Z", "schema": "ridtrace/1", "message": "m",
              "event": "request.start", "request_id": "r1", "trace_id": "1" * 32,
              "span_id": "a" * 16}
    log = tmp_path / "events.json"
    log.write_bytes(_filter_log_events(
        [b"frontend: starting", json.dumps(record).encode()], "frontend"))
    code, doc = analyze_json(str(log))
    assert doc["summary"]["bad_line_samples"] == [
        {"file": str(log), "line": 6, "reason": "not JSON"}]
    assert (doc["summary"]["lines"], doc["summary"]["requests"]) == (2, 1)
    assert code == 3  # one bad line in two


def test_follow_reads_an_aws_logs_document(tmp_path: Path) -> None:
    record = json.dumps({"time": "2026-11-29T10:00:00Z", "schema": "ridtrace/1",
                         "message": "m"}).encode()
    (tmp_path / "events.json").write_bytes(_filter_log_events([record] * 3, "frontend"))
    summary = followed_summary(tmp_path)
    assert summary["bad_line_samples"] == []
    assert summary["lines"] == 3


def test_a_document_of_one_page_of_the_events_says_the_rest_is_unread(tmp_path: Path) -> None:
    # `aws logs filter-log-events --max-items 4` ends its document with the NextToken to
    # go on from (`--no-paginate`, with the API's nextToken): the events past it were
    # read as none, and the sample's Unlinked error among them was a clean "No
    # findings", exit 0.
    sample = Path(__file__).parents[1] / "forensics" / "data" / "dynamo-jsonl-sample.jsonl"
    page = json.loads(_filter_log_events(sample.read_bytes().splitlines()[:4], "frontend"))
    for token in ("NextToken", "nextToken"):
        log = tmp_path / f"{token}.json"
        log.write_text(json.dumps({**page, token: "eyJuZXh0VG9rZW4iOiAiZjEifQ=="}, indent=4))
        code, doc = analyze_json(str(log))
        summary = doc["summary"]
        at = next(n for n, line in enumerate(log.read_text().splitlines(), 1) if token in line)
        assert summary["bad_line_samples"] == [{
            "file": str(log), "line": at, "reason": "one page of the query's answer: the "
            "events before its NextToken (--max-items, --no-paginate)"}]
        [note] = summary["unreadable_files"]
        assert "--max-items" in note["reason"]
        assert (summary["lines"], summary["incomplete"], code) == (5, True, 3)


def test_an_events_message_that_is_no_string_is_a_bad_line(tmp_path: Path) -> None:
    # A message of null or a number (a document edited by hand) was passed over with the
    # document's other lines: the event neither read nor counted, the read "whole".
    sample = Path(__file__).parents[1] / "forensics" / "data" / "dynamo-jsonl-sample.jsonl"
    document = json.loads(_filter_log_events(sample.read_bytes().splitlines(), "frontend"))
    document["events"][6]["message"] = None  # the Unlinked error's event
    log = tmp_path / "events.json"
    log.write_text(json.dumps(document, indent=4))
    code, doc = analyze_json(str(log))
    summary = doc["summary"]
    at = [n for n, line in enumerate(log.read_text().splitlines(), 1) if '"message": ' in line][6]
    assert [s["line"] for s in summary["bad_line_samples"]] == [at]
    assert (summary["lines"], summary["bad_lines"], summary["incomplete"], code) == (9, 1, True, 3)
