"""Loki's query API answer saved as it came (``curl …/loki/api/v1/query_range``): one
JSON line holding every stream's lines, newest first. It was one bad line ("missing
time"), no request read, exit 3 on a real incident; each value's line is read now,
cited at the answer's line."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from tests.cli.helpers import analyze_json
from tests.forensics.helpers import followed_summary, rt_request
from tests.support.follower import start_follower


def _query_range(streams: dict[str, list[str]]) -> bytes:
    """Loki's answer to a query_range of log streams: each stream's [ns, line] values,
    newest first (its default direction), compact as Loki writes it."""
    result = [{"stream": {"app": app}, "values": [
        [str(1796205600000000000 + n), line + "\n"] for n, line in enumerate(lines)][::-1]}
        for app, lines in streams.items()]
    return json.dumps({"status": "success", "data": {
        "resultType": "streams", "result": result,
        "stats": {"summary": {"totalLinesProcessed": 4}}}}, separators=(",", ":")).encode()


def test_the_lines_of_a_loki_answer_are_read(tmp_path: Path) -> None:
    log = tmp_path / "loki.json"
    log.write_bytes(_query_range({
        "frontend": rt_request("a" * 16, "7", 0, 2) + rt_request("b" * 16, "7", 1, 3)}))
    code, doc = analyze_json(str(log))
    assert doc["summary"]["bad_line_samples"] == []
    assert (doc["summary"]["lines"], doc["summary"]["requests"]) == (4, 2)  # its records
    assert [(f["kind"], {e["line"] for e in f["evidence"]}) for f in doc["findings"]] == [
        ("duplicate_in_flight", {1})]
    assert code == 1


def test_a_text_line_in_a_loki_answer_makes_it_a_bad_line(tmp_path: Path) -> None:
    log = tmp_path / "loki.json"
    log.write_bytes(_query_range({"frontend": ["starting up", *rt_request("a" * 16, "7", 0, 2)]}))
    code, doc = analyze_json(str(log))
    assert [s["line"] for s in doc["summary"]["bad_line_samples"]] == [1]
    assert doc["summary"]["requests"] == 1
    assert code == 3


def test_a_line_cut_short_in_a_loki_answer_loses_only_itself(tmp_path: Path) -> None:
    # Read back to back with the answer's others, it lost them all ("not JSON").
    front = rt_request("a" * 16, "7", 0, 2) + rt_request("b" * 16, "7", 1, 3)
    log = tmp_path / "loki.json"
    log.write_bytes(_query_range({"frontend": [front[0][:50], *front]}))
    code, doc = analyze_json(str(log))
    assert (doc["summary"]["lines"], doc["summary"]["requests"]) == (5, 2)
    assert [s["line"] for s in doc["summary"]["bad_line_samples"]] == [1]
    assert [f["kind"] for f in doc["findings"]] == ["duplicate_in_flight"] and code == 1


def test_follow_reads_a_loki_answer(tmp_path: Path) -> None:
    answer = _query_range({"frontend": rt_request("a" * 16, "7", 0, 2)})
    (tmp_path / "loki.json").write_bytes(answer + b"\n")  # curl -w '\n' ends it so
    summary = followed_summary(tmp_path)
    assert summary["bad_line_samples"] == []
    assert summary["requests"] == 1


def test_follow_reads_a_one_line_answer_without_its_newline(tmp_path: Path) -> None:
    # curl saves Loki's answer with no newline after it: with no whole line, the follow
    # never looked at a head to know the wrapping, and read the line as it was at the
    # stop, one bad line ("missing time") where the batch read found the request.
    log = tmp_path / "loki.json"
    log.write_bytes(_query_range({"frontend": rt_request("a" * 16, "7", 0, 2)}))
    follower = start_follower([str(log)], "--from-start")
    code = follower.stop(signal.SIGINT)
    summary = follower.summary()
    assert summary["bad_line_samples"] == []
    assert (summary["lines"], summary["requests"]) == (2, 1)  # its records
    assert code == 0


def test_an_answer_jq_indented_is_read_value_by_value(tmp_path: Path) -> None:
    # `curl …/query_range | jq .`: each [time, line] value spread over four lines.
    answer = _query_range({
        "frontend": rt_request("a" * 16, "7", 0, 2) + rt_request("b" * 16, "7", 1, 3)})
    log = tmp_path / "loki.json"
    log.write_text(json.dumps(json.loads(answer), indent=2) + "\n")
    code, doc = analyze_json(str(log))
    assert doc["summary"]["bad_line_samples"] == []
    assert (doc["summary"]["lines"], doc["summary"]["requests"]) == (4, 2)
    cited = log.read_text().split("\n")
    assert sorted(cited[e["line"] - 1].strip() for f in doc["findings"] for e in f["evidence"]) == [
        "]", "],", "],", "],"]  # each value's closing line
    assert code == 1


def test_a_loki_line_behind_a_container_runtime_s_prefix_is_read(tmp_path: Path) -> None:
    # promtail (or Alloy) tailing /var/log/pods without its `cri` stage stores each line
    # with the runtime's prefix: every line of the answer was a bad one.
    lines = [f"2026-12-01T10:00:00.{n:06d}Z stderr F {line}"
             for n, line in enumerate(rt_request("a" * 16, "7", 0, 2) + rt_request("b" * 16, "7", 1, 3))]
    log = tmp_path / "loki.json"
    log.write_bytes(_query_range({"frontend": lines}))
    code, doc = analyze_json(str(log))
    assert doc["summary"]["bad_line_samples"] == []
    assert (doc["summary"]["lines"], doc["summary"]["requests"]) == (4, 2)
    assert [f["kind"] for f in doc["findings"]] == ["duplicate_in_flight"] and code == 1
