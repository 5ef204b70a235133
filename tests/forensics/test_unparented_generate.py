"""Dynamo's ``generate`` span logged without ``parent_id``: inside its ``http-request``.

The shared sample's pre-fix Unlinked failure (`/work/shared/samples`, line 7) is a
``generate`` line with no ``parent_id``. With its request's ``http-request`` lines
beside it, the one failed request was counted as two requests holding its id at once:
an invented ``duplicate_in_flight`` error (exit 1) in `analyze`, `--engine dask`,
`--follow` and `trace` alike. Such a span's parent is its trace's one other frontend
span.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.forensics import analyze, load_events, report_json
from ridtrace.forensics.live.rules import LiveRules
from tests.forensics.helpers import rt
from tests.forensics.test_follow_rules import S, _rows

_UNLINKED = "Unlinked response; response task was dropped or cancelled"


def _line(t: str, message: str, span: str, name: str, trace: str, **more: Any) -> str:
    return json.dumps({
        "time": f"2026-10-02T14:05:{t}Z", "level": "INFO", "file": "generate.rs", "line": 1,
        "target": "dynamo_llm::http::service::generate", "message": message,
        "request_id": "1", "span_id": span, "span_name": name, "trace_id": trace,
        "x_request_id": "1", **more})


def _request(trace: str, host: str, inner: str, start: int) -> list[str]:
    """A pre-fix request on /inference/v1/generate that failed Unlinked."""
    return [
        _line(f"{start:02d}.100000", "request received", host, "http-request", trace,
              uri="/inference/v1/generate", method="POST"),
        _line(f"{start:02d}.400000", "engine generate call failed", inner, "generate", trace,
              error=_UNLINKED, level="ERROR"),
        _line(f"{start:02d}.700000", "http response sent", host, "http-request", trace,
              latency_ms="600", status="500", uri="/inference/v1/generate", method="POST"),
    ]


def _report(path: Path) -> dict[str, Any]:
    return report_json(analyze(load_events([str(path)])))


def test_one_failed_request_is_one_request_with_one_unlinked(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(_request("b6" * 16, "a1" * 8, "5c" * 8, 1)) + "\n")
    doc = _report(log)
    assert [f["kind"] for f in doc["findings"]] == ["unlinked"]
    assert doc["summary"]["requests"] == 1 and doc["summary"]["spans"] == 2


def test_two_such_requests_holding_one_id_at_once_are_still_a_duplicate(
    tmp_path: Path,
) -> None:
    log = tmp_path / "frontend.jsonl"
    lines = _request("b6" * 16, "a1" * 8, "5c" * 8, 1) + _request("c7" * 16, "a2" * 8,
                                                                  "5d" * 8, 1)
    log.write_text("\n".join(sorted(lines, key=lambda x: json.loads(x)["time"])) + "\n")
    doc = _report(log)
    kinds = sorted(f["kind"] for f in doc["findings"])
    assert kinds == ["duplicate_in_flight", "unlinked", "unlinked"]
    assert doc["summary"]["requests"] == 2
    found = next(f for f in doc["findings"] if f["kind"] == "duplicate_in_flight")
    assert found["detail"].startswith("2 requests held request_id 1")


def test_trace_shows_the_generate_span_inside_its_request(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(_request("b6" * 16, "a1" * 8, "5c" * 8, 1)) + "\n")
    got = CliRunner().invoke(main, ["trace", "1", str(log), "--format", "json", "-q"])
    doc = json.loads(got.output)
    assert doc["matched"] == 1, doc
    (request,) = doc["requests"]
    assert {e["span_id"] for e in request["events"]} == {"a1" * 8, "5c" * 8}


def test_behind_a_gateway_the_generate_span_is_in_the_dynamo_request_not_a_second_one(
    tmp_path: Path,
) -> None:
    # A gateway under ridtrace's middleware calls Dynamo: its span is the http-request
    # span's parent, in the same trace. Counted as a second frontend span of the trace,
    # it left the generate span unnested: a clean request was a duplicate, exit 1.
    trace, gateway = "b6" * 16, "9a" * 8
    (tmp_path / "gateway.jsonl").write_text("\n".join([
        rt("request.start", time="2026-10-02T14:05:01.000000Z", request_id="gw-1",
           x_request_id="1", trace_id=trace, span_id=gateway, path="/v1/generate"),
        rt("request.end", time="2026-10-02T14:05:01.900000Z", request_id="gw-1",
           x_request_id="1", trace_id=trace, span_id=gateway, status=200, outcome="ok"),
    ]) + "\n")
    dynamo = [json.loads(line) for line in _request(trace, "a1" * 8, "5c" * 8, 1)]
    dynamo[0]["parent_id"] = dynamo[2]["parent_id"] = gateway
    dynamo[1].update(message="request completed", level="DEBUG")
    dynamo[1].pop("error")
    dynamo[2]["status"] = "200"
    (tmp_path / "dynamo.jsonl").write_text("\n".join(map(json.dumps, dynamo)) + "\n")
    doc = _report(tmp_path)
    assert doc["findings"] == [] and doc["summary"]["requests"] == 1


def test_a_generate_span_after_its_traces_only_request_ended_is_a_request_of_its_own(
    tmp_path: Path,
) -> None:
    # A caller that reused the trace's traceparent two minutes later, its own
    # http-request lines not in the logs: not the finished request's generate span.
    log = tmp_path / "frontend.jsonl"
    late = json.loads(_request("b6" * 16, "a1" * 8, "5c" * 8, 1)[1])
    late["time"] = "2026-10-02T14:07:01.000000Z"
    log.write_text("\n".join([*_request("b6" * 16, "a1" * 8, "5b" * 8, 1)[::2],
                              json.dumps(late)]) + "\n")
    assert _report(log)["summary"]["requests"] == 2


def test_a_second_generate_span_in_one_request_is_another_callers(tmp_path: Path) -> None:
    # Two callers sharing a traceparent, one's http-request lines not in the logs: the
    # second generate span starting in the first's request was taken in too, and the
    # duplicate hidden.
    log = tmp_path / "frontend.jsonl"
    lines = _request("b6" * 16, "a1" * 8, "5c" * 8, 1)
    other = json.loads(lines[1])
    other.update(span_id="5d" * 8, time="2026-10-02T14:05:01.500000Z")
    log.write_text("\n".join([*lines, json.dumps(other)]) + "\n")
    doc = _report(log)
    assert doc["summary"]["requests"] == 2
    assert "duplicate_in_flight" in {f["kind"] for f in doc["findings"]}


@pytest.mark.parametrize("parent", ["", "0000000000000000"])
def test_a_parent_id_naming_no_span_is_no_parent(tmp_path: Path, parent: str) -> None:
    log = tmp_path / "frontend.jsonl"
    lines = [json.loads(line) for line in _request("b6" * 16, "a1" * 8, "5c" * 8, 1)]
    lines[1]["parent_id"] = parent
    log.write_text("\n".join(map(json.dumps, lines)) + "\n")
    doc = _report(log)
    assert [f["kind"] for f in doc["findings"]] == ["unlinked"]
    assert doc["summary"]["requests"] == 1


def test_trace_nests_the_generate_span_whatever_the_trace_ids_spelling(
    tmp_path: Path,
) -> None:
    log = tmp_path / "frontend.jsonl"
    lines = [json.loads(line) for line in _request("b6" * 16, "a1" * 8, "5c" * 8, 1)]
    lines[1]["trace_id"] = "0x" + lines[1]["trace_id"].upper()
    log.write_text("\n".join(map(json.dumps, lines)) + "\n")
    got = CliRunner().invoke(main, ["trace", "1", str(log), "--format", "json", "-q"])
    assert json.loads(got.output)["matched"] == 1, got.output


def _live_row(span: str, t0: int, *, inner: bool = False, t1: int | None = None,
              trace: str = "b6" * 16, **more: Any) -> dict[str, Any]:
    """One span's row as the live rules get it: a host (``http-request``) unless `inner`."""
    return {"span_id": span, "request_id": "1", "x_request_id": "1", "t0": t0,
            "t1": t1 if t1 is not None else t0, "trace_id": trace, "inner": inner,
            "outer": not inner, **more}


def _live(*rows: dict[str, Any]) -> tuple[LiveRules, list[dict[str, Any]]]:
    rules = LiveRules(window_s=600)
    found = [f for row in rows for f in rules.feed(_rows(row))]  # a poll each
    return rules, found


def test_live_the_generate_span_read_before_or_after_its_request_is_one_caller() -> None:
    host = _live_row("a1" * 8, 0, t1=S, closing=True)
    inner = _live_row("5c" * 8, S // 2, inner=True)
    for rows in ([host, inner], [inner, host]):
        rules, found = _live(*rows)
        assert found == [], rows
        assert rules.callers_seen == 1, rows


def test_live_two_requests_with_their_generate_spans_are_still_a_duplicate() -> None:
    first = [_live_row("a1" * 8, 0, t1=3 * S), _live_row("5c" * 8, S, inner=True)]
    second = [_live_row("a2" * 8, 2 * S, t1=4 * S, trace="c7" * 16),
              _live_row("5d" * 8, 2 * S, inner=True, trace="c7" * 16)]
    _, found = _live(*first, *second)
    assert [(f["kind"], f["request_id"]) for f in found] == [("duplicate_in_flight", "1")]


def test_live_a_reused_traceparent_puts_the_generate_span_in_the_request_it_started_in(
) -> None:
    # Request A (host a1) ended long before request B reused its traceparent; B's
    # generate span, read before B's host a2, was put in A (the trace's first host):
    # the duplicate between B and C was printed as A's, at A's time, two minutes early.
    done = _live_row("a1" * 8, 0, t1=S, closing=True)
    generate = _live_row("5d" * 8, 120 * S, inner=True)
    other = _live_row("c1" * 8, 120 * S, t1=122 * S, trace="c7" * 16)
    host = _live_row("a2" * 8, 119 * S, t1=121 * S, closing=True)
    for rows in ([done, generate, host, other], [done, generate, other, host]):
        rules, found = _live(*rows)
        assert [f["kind"] for f in found] == ["duplicate_in_flight"], rows
        assert found[0]["span_id"] in ("a2" * 8, "c1" * 8), found  # not A's: it had ended
        assert rules.callers_seen == 3, rows


def test_live_a_second_generate_span_in_one_host_is_another_callers() -> None:
    host = _live_row("a1" * 8, 0, t1=2 * S)
    first = _live_row("5c" * 8, S // 10, inner=True)
    second = _live_row("5d" * 8, S // 2, inner=True)
    rules, found = _live(host, first, second)
    assert [f["kind"] for f in found] == ["duplicate_in_flight"]
    assert rules.callers_seen == 2


def _ok_line(t: str, message: str, span: str, name: str, trace: str, rid: str,
             **more: Any) -> str:
    return json.dumps({
        "time": f"2026-10-02T14:05:{t}Z", "level": "INFO", "target": "dynamo_llm::http",
        "message": message, "request_id": rid, "span_id": span, "span_name": name,
        "trace_id": trace, "x_request_id": "shared-tp", **more})


def test_two_callers_sharing_a_traceparent_keep_their_generate_spans(tmp_path: Path) -> None:
    # Two clients sent one traceparent; each request got an id of its own (server-minted)
    # and its generate span, logged without parent_id, started while both were in
    # flight: with two hosts it stayed a request of its own, and a request and its own
    # generate span were two holding its id, a false duplicate_in_flight (exit 1).
    trace, u1, u2 = "b6" * 16, "1111-aaaa", "2222-bbbb"
    lines = [
        _ok_line("01.000000", "request received", "a1" * 8, "http-request", trace, u1),
        _ok_line("01.100000", "engine generate call", "5c" * 8, "generate", trace, u1),
        _ok_line("01.200000", "request received", "a2" * 8, "http-request", trace, u2),
        _ok_line("01.300000", "engine generate call", "5d" * 8, "generate", trace, u2),
        _ok_line("01.900000", "http response sent", "a1" * 8, "http-request", trace, u1,
                 latency_ms="900", status="200"),
        _ok_line("02.000000", "http response sent", "a2" * 8, "http-request", trace, u2,
                 latency_ms="800", status="200"),
    ]
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(lines) + "\n")
    doc = _report(log)
    # Two requests of one client id, each its own: the reuse is told, no error.
    assert [f["kind"] for f in doc["findings"]] == ["client_id_reuse"]
    assert doc["summary"]["requests"] == 2


def test_live_a_generate_span_of_two_hosts_goes_to_the_one_of_its_own_id() -> None:
    first = _live_row("a1" * 8, 0, t1=4 * S, request_id="u1")
    second = _live_row("a2" * 8, S, t1=5 * S, request_id="u2")
    generate = _live_row("5d" * 8, 2 * S, inner=True, request_id="u2")
    rules, found = _live(first, second, generate)
    assert found == [] and rules.callers_seen == 2
