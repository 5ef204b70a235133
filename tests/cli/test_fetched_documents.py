"""Logs fetched from Cloud Logging (``gcloud logging read --format=json``) or Elasticsearch
(a ``_search`` response, ``?pretty``) as one indented JSON document, each entry spread
over many lines. Every line of such a file was a bad one: no request read, exit 3 on a
real incident. Each entry is read now as the line its envelope carries, cited at its
last line of the document."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import analyze_json
from tests.forensics.helpers import followed_summary, rt_request
from tests.support.follower import start_follower


def _gcloud_read(lines: list[bytes]) -> bytes:
    """``gcloud logging read --format=json`` of a GKE container's JSON lines: the agent
    parsed each into ``jsonPayload`` and moved its ``time`` to the entry's ``timestamp``;
    keys sorted, indented by two, newest first."""
    entries = []
    for n, line in enumerate(lines):
        record = json.loads(line)
        time = record.pop("time")
        entries.append({"insertId": f"ins{n}", "jsonPayload": record, "labels": {},
                        "logName": "projects/p/logs/stdout", "receiveTimestamp": time,
                        "resource": {"labels": {"pod_name": "fe-2"}, "type": "k8s_container"},
                        "severity": "INFO", "timestamp": time})
    return json.dumps(entries[::-1], indent=2, sort_keys=True).encode() + b"\n"


def _search_response(lines: list[bytes]) -> bytes:
    """An Elasticsearch ``_search?pretty`` response over Filebeat's documents (each line
    in ``message``), as Jackson indents it (a space before each colon)."""
    hits = [{"_index": "filebeat-8", "_id": str(n), "_score": None,
             "_source": {"@timestamp": "2026-11-29T10:00:00Z", "message": line.decode(),
                         "log": {"offset": n}}, "sort": [n]} for n, line in enumerate(lines)]
    document = {"took": 4, "timed_out": False, "_shards": {"total": 1, "failed": 0},
                "hits": {"total": {"value": len(hits)}, "max_score": None, "hits": hits}}
    return json.dumps(document, indent=2).replace('": ', '" : ').encode() + b"\n"


def _fetched(plain: Path, into: Path, fetch: Callable[[list[bytes]], bytes]) -> Path:
    into.mkdir()
    for path in plain.iterdir():  # saved as such a fetch is: a .json document
        (into / f"{path.stem}.json").write_bytes(fetch(path.read_bytes().splitlines()))
    return into


@pytest.fixture(scope="module")
def want(plain: Path) -> tuple[int, dict[str, Any]]:
    """The report on the logs as they were written."""
    return analyze_json(str(plain))


@pytest.mark.parametrize("fetch", [_gcloud_read, _search_response])
def test_a_fetched_document_is_read_entry_by_entry(
    plain: Path, tmp_path: Path, want: tuple[int, dict[str, Any]],
    fetch: Callable[[list[bytes]], bytes],
) -> None:
    want_code, expected = want
    code, got = analyze_json(str(_fetched(plain, tmp_path / "fetched", fetch)))
    assert got["summary"]["bad_line_samples"] == []
    assert got["summary"]["ignored_files"] == []
    assert [(f["kind"], f["span_id"], f["detail"]) for f in got["findings"]] == [
        (f["kind"], f["span_id"], f["detail"]) for f in expected["findings"]]
    assert (got["summary"]["requests"], got["summary"]["lines"]) == (
        expected["summary"]["requests"], expected["summary"]["lines"])
    assert code == want_code == 1
    for finding in got["findings"]:
        for ev in finding["evidence"]:  # an entry's last line: its closing brace
            cited = Path(ev["file"]).read_bytes().split(b"\n")[ev["line"] - 1]
            assert cited.strip() in (b"}", b"},")


def test_a_document_cut_short_says_so_and_reads_the_entries_before(tmp_path: Path) -> None:
    record = {"time": "2026-11-29T10:00:00Z", "schema": "ridtrace/1", "message": "m",
              "event": "request.start", "request_id": "r1", "trace_id": "1" * 32,
              "span_id": "a" * 16}
    whole = _gcloud_read([json.dumps(record).encode()] * 2)
    log = tmp_path / "read.json"
    log.write_bytes(whole[: whole.index(b'"insertId": "ins0"')])  # a download cut short
    code, doc = analyze_json(str(log))
    assert [s["reason"] for s in doc["summary"]["bad_line_samples"]] == [
        "cut short (JSON document of log entries record whose last part is missing)"]
    assert (doc["summary"]["lines"], doc["summary"]["requests"]) == (2, 1)
    assert code == 3


def test_a_search_response_of_one_page_of_the_hits_says_the_rest_is_unread(
    tmp_path: Path,
) -> None:
    # Kibana's Dev Tools and `curl …/_search` give `size` hits (10 unless asked) of the
    # `hits.total` the query matched: 4 of 9 were read as the whole log, and the
    # Unlinked error among the other 5 was a clean "No findings", exit 0.
    sample = Path(__file__).parents[1] / "forensics" / "data" / "dynamo-jsonl-sample.jsonl"
    lines = sample.read_bytes().splitlines()
    page = json.loads(_search_response(lines[:4]))
    page["hits"]["total"] = {"value": 9, "relation": "eq"}
    log = tmp_path / "search.json"
    log.write_text(json.dumps(page, indent=2).replace('": ', '" : ') + "\n")
    code, doc = analyze_json(str(log))
    summary = doc["summary"]
    closing = log.read_text().splitlines().index("    ]") + 1  # the hits array's end
    assert summary["bad_line_samples"] == [{
        "file": str(log), "line": closing,
        "reason": "one page of the query's answer: 4 of 9 hits"}]
    [note] = summary["unreadable_files"]
    assert note["file"] == str(log) and "one page of a query's answer" in note["reason"]
    assert summary["incomplete"] is True and code == 3
    # Elasticsearch 6's total is a number; all the hits fetched is the whole answer.
    page["hits"]["total"] = 9
    log.write_text(json.dumps(page, indent=2).replace('": ', '" : ') + "\n")
    assert analyze_json(str(log))[1]["summary"]["unreadable_files"] != []
    # A total counted only so far (track_total_hits stops at 10,000) is a lower bound.
    page["hits"]["total"] = {"value": 4, "relation": "gte"}
    log.write_text(json.dumps(page, indent=2).replace('": ', '" : ') + "\n")
    assert [s["reason"] for s in analyze_json(str(log))[1]["summary"]["bad_line_samples"]] == [
        "one page of the query's answer: 4 of at least 4 hits"]
    whole = _search_response(lines)
    log.write_bytes(whole.replace(b'"value" : 9', b'"value" : 9,\n      "relation" : "eq"'))
    code, doc = analyze_json(str(log))
    assert (doc["summary"]["lines"], doc["summary"]["bad_lines"]) == (9, 0)
    assert doc["summary"]["unreadable_files"] == [] and code == 1


def test_a_text_payload_is_judged_as_the_text_it_is(tmp_path: Path) -> None:
    record = {"time": "2026-11-29T10:00:00Z", "schema": "ridtrace/1", "message": "m"}
    entries = [{"insertId": "1", "textPayload": "INFO: Uvicorn running on :8000\n",
                "timestamp": "2026-11-29T10:00:00Z"},
               {"insertId": "2", "textPayload": json.dumps(record) + "\n",
                "timestamp": "2026-11-29T10:00:00Z"}]
    log = tmp_path / "read.json"
    log.write_text(json.dumps(entries, indent=2, sort_keys=True))
    _, doc = analyze_json(str(log))
    assert [s["line"] for s in doc["summary"]["bad_line_samples"]] == [6]  # its closing line
    assert doc["summary"]["bad_line_samples"][0]["reason"].endswith("not JSON")
    assert doc["summary"]["lines"] == 2


def test_an_array_of_other_objects_in_a_walk_is_still_no_log(tmp_path: Path) -> None:
    (tmp_path / "pods.json").write_text(json.dumps(
        [{"name": "fe-2", "labels": {"app": "frontend"}}, {"name": "w-1"}], indent=2))
    code, doc = analyze_json(str(tmp_path), "--allow-incomplete")
    assert doc["summary"]["ignored_files"] == [
        {"file": str(tmp_path / "pods.json"), "reason": "a JSON document, not JSON lines"}]
    assert code == 0


def test_follow_reads_a_gcloud_document(tmp_path: Path) -> None:
    record = json.dumps({"time": "2026-11-29T10:00:00Z", "schema": "ridtrace/1",
                         "message": "m"}).encode()
    (tmp_path / "read.json").write_bytes(_gcloud_read([record] * 3))
    summary = followed_summary(tmp_path)
    assert summary["bad_line_samples"] == []
    assert summary["lines"] == 3


def test_a_follow_from_the_end_reads_the_entries_written_since(tmp_path: Path) -> None:
    # `gcloud logging read … > logs/gcp.json` still writing while `analyze --follow logs/`
    # starts: its entries were found by their depth counted from the document's top,
    # which a follow from the end never saw, so every entry written since was dropped
    # in silence (no line, no bad line).
    lines = [*rt_request("0" * 16, "1", 0, 1), *rt_request("a" * 16, "7", 2, 4),
             *rt_request("b" * 16, "7", 3, 5)]
    whole = _gcloud_read([line.encode() for line in lines[::-1]])  # oldest first again
    cut = whole.index(b"\n  {", whole.index(b'"insertId": "ins4"'))  # after two entries
    log = tmp_path / "gcp.json"
    log.write_bytes(whole[:cut + 1])
    follower = start_follower([str(log)])
    with log.open("ab") as out:
        out.write(whole[cut + 1:])
    follower.wait_for(lambda: bool(follower.findings()), timeout=60, what="a finding")
    follower.stop(signal.SIGINT)
    summary = follower.summary()
    assert summary["bad_line_samples"] == []
    assert (summary["lines"], summary["requests"]) == (4, 2)
