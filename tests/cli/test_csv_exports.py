"""Log lines exported as CSV (Kibana's Discover "Generate CSV"): a header row, then a row
per document, the line in its ``message`` column or the whole document in ``_source``.
Every row was a bad one ("not JSON"), no request read, exit 3 on a real incident; each
row is read now as that column's line, cited at the row."""

from __future__ import annotations

import csv
import io
import json
import signal
from pathlib import Path

import pytest

from tests.cli.helpers import analyze_json
from tests.forensics.helpers import rt_request
from tests.support.follower import start_follower


def _kibana_csv(column: str, lines: list[str]) -> str:
    out = io.StringIO()
    rows = csv.writer(out)  # Kibana quotes a value with a quote or comma, doubling quotes
    rows.writerow(["'@timestamp", column])  # its formula escape before "@"
    for line in lines:
        value = line if column == "message" else json.dumps(
            {"@timestamp": "2026-11-29T10:00:00.000Z", "message": line, "host": {"name": "n1"}})
        rows.writerow(["Nov 29, 2026 @ 10:00:00.000", value])
    return out.getvalue()


@pytest.mark.parametrize("column", ["message", "_source"])
def test_the_rows_of_a_kibana_csv_are_read(tmp_path: Path, column: str) -> None:
    lines = ["frontend: starting", *rt_request("a" * 16, "7", 0, 2), *rt_request("b" * 16, "7", 1, 3)]
    (tmp_path / "discover.csv").write_text(_kibana_csv(column, lines))
    code, doc = analyze_json(str(tmp_path), "--allow-incomplete")
    assert [(s["line"], s["reason"]) for s in doc["summary"]["bad_line_samples"]] == [
        (2, "not JSON")]  # the banner's row
    assert (doc["summary"]["lines"], doc["summary"]["requests"]) == (5, 2)
    assert [(f["kind"], [e["line"] for e in f["evidence"]]) for f in doc["findings"]] == [
        ("duplicate_in_flight", [3, 4, 5, 6])]
    assert code == 1


@pytest.mark.parametrize("header", [
    ["_time", "_raw", "host"], ["Date", "Host", "Message"], ["@timestamp", "@message", "@logStream"],
    ["TimeGenerated [UTC]", "PodName", "LogMessage"], ["Date", "Time", "Line", "tsNs", "id"],
])
def test_the_rows_of_splunks_csv_and_a_ui_export_are_read(tmp_path: Path, header: list[str]) -> None:
    # Splunk's export as CSV holds the event in "_raw", CloudWatch Logs Insights' download
    # in "@message", Azure Monitor's (Log Analytics) in "LogMessage"; a log UI's download
    # names its columns in its own case (Grafana's of Loki's lines: "Line").
    lines = ["frontend: starting", *rt_request("a" * 16, "7", 0, 2), *rt_request("b" * 16, "7", 1, 3)]
    out = io.StringIO()
    rows = csv.writer(out)
    rows.writerow(header)
    at = next(i for i, name in enumerate(header) if name.lower() in ("_raw", "message", "@message", "logmessage", "line"))
    for line in reversed(lines):  # newest first, as Splunk exports
        row = ["2026-11-29T10:00:00.000+0000", "node-3", "x", "1796205600000000000", "1"]
        row = row[:len(header)]
        row[at] = line
        rows.writerow(row)
    (tmp_path / "export.csv").write_text(out.getvalue())
    code, doc = analyze_json(str(tmp_path), "--allow-incomplete")
    assert [(s["line"], s["reason"]) for s in doc["summary"]["bad_line_samples"]] == [
        (6, "not JSON")]  # the banner's row, last
    assert (doc["summary"]["lines"], doc["summary"]["requests"]) == (5, 2)
    assert [f["kind"] for f in doc["findings"]] == ["duplicate_in_flight"]
    assert code == 1


def test_a_csv_of_other_things_in_a_walk_is_still_no_log(tmp_path: Path) -> None:
    (tmp_path / "alerts.csv").write_text('time,message\n2026-11-29,"disk {full}"\n')
    code, doc = analyze_json(str(tmp_path))
    assert [n["file"] for n in doc["summary"]["ignored_files"]] == [str(tmp_path / "alerts.csv")]
    assert code == 3  # no log line read: the walk's "No findings" is no clean bill


def test_a_follow_from_the_end_reads_every_row_written_since(tmp_path: Path) -> None:
    # The header row was known by being the first line fed: a follow from the end
    # feeds the rows written since, and dropped the first of them as a header.
    export = tmp_path / "discover.csv"
    export.write_text(_kibana_csv("message", rt_request("0" * 16, "1", 0, 1)))
    follower = start_follower([str(export)])
    rows = _kibana_csv("message", rt_request("a" * 16, "7", 2, 4) + rt_request("b" * 16, "7", 3, 5))
    with export.open("a") as out:
        out.write(rows.split("\n", 1)[1])  # the rows, not the header again
    follower.wait_for(lambda: bool(follower.findings()), timeout=60, what="a finding")
    follower.stop(signal.SIGINT)
    summary = follower.summary()
    assert summary["bad_line_samples"] == []
    assert (summary["lines"], summary["requests"]) == (4, 2)
