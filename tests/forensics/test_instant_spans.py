"""Dynamo at INFO level: frontend requests start where their last line says they began.

Without Dynamo's DEBUG ``request received`` line a frontend span is its last line alone.
Its start is that line's time less the duration it states (``latency_ms`` on ``http
response sent``, ``time.duration_us`` on ``SPAN_CLOSED``), so requests in flight at once
overlap. Where no line states one, the read is named incomplete, not passed clean
("No findings.", exit 0, over a duplicate in flight).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.forensics.live.follow import Follower, FollowSettings
from ridtrace.testing.dynamo import DynamoSpec, write_dynamo_logs


def _logs(out: Path, *, drop_levels: tuple[str, ...], frontend_only: bool = False) -> Path:
    # Enough requests that the banner line is far under 1 % of the lines.
    write_dynamo_logs(out, DynamoSpec(requests=1500, duplicates=3, cancelled=0, bad_lines=0))
    for log in out.glob("*.jsonl"):
        kept = [line for line in log.read_text().splitlines(keepends=True)
                if not any(f'"level":"{level}"' in line for level in drop_levels)]
        log.write_text("".join(kept))
    if frontend_only:  # at INFO its workers logged nothing but their banners
        for worker in out.glob("worker-*.jsonl"):
            worker.unlink()
    return out


def _rewrite(logs: Path, change: re.Pattern[str], into: str) -> None:
    for log in logs.glob("*.jsonl"):
        log.write_text(change.sub(into, log.read_text()))


def _analyze(logs: Path) -> tuple[int, dict]:
    result = CliRunner().invoke(main, ["analyze", str(logs), "--format", "json", "-q"])
    return result.exit_code, json.loads(result.stdout)


def _follow(logs: Path) -> tuple[list[dict], dict]:
    follower = Follower([str(logs)], FollowSettings(from_start=True))
    try:
        found, _ = follower.poll()
        found += follower.finish()
        return found, follower.summary()
    finally:
        follower.close()


def _instant_reasons(summary: dict) -> list[str]:
    return [r for r in summary["incomplete_reasons"] if "at one instant" in r]


def test_info_level_requests_start_by_their_stated_latency(tmp_path: Path) -> None:
    # DEBUG lines gone (the level Dynamo runs at), and the collisions' ERROR lines too:
    # each request is its "http response sent" line, with its latency_ms.
    logs = _logs(tmp_path, drop_levels=("DEBUG", "ERROR"), frontend_only=True)
    code, doc = _analyze(logs)
    summary = doc["summary"]
    assert summary["duplicate_in_flight"] == 3 and code == 1
    assert not summary["incomplete"] and _instant_reasons(summary) == []
    ids = {f["x_request_id"] for f in doc["findings"] if f["kind"] == "duplicate_in_flight"}
    assert len(ids) == 3 and all(i.startswith("retry-") for i in ids)


def test_span_closed_lines_start_by_their_stated_duration(tmp_path: Path) -> None:
    # DYN_LOGGING_SPAN_EVENTS=1 at INFO: the span's close, with time.duration_us (a JSON
    # number) instead of the response line's latency.
    logs = _logs(tmp_path, drop_levels=("DEBUG", "ERROR"), frontend_only=True)

    def closed(match: re.Match[str]) -> str:
        return (f'"message":"SPAN_CLOSED","time.duration_us":{int(match[1]) * 1000},'
                f'"time.busy_us":12')
    for log in logs.glob("*.jsonl"):
        log.write_text(re.sub(
            r'"message":"http response sent","latency_ms":"(\d+)"', closed, log.read_text()))
    code, doc = _analyze(logs)
    assert doc["summary"]["duplicate_in_flight"] == 3 and code == 1
    assert _instant_reasons(doc["summary"]) == []


def test_info_level_logs_with_no_duration_make_the_report_incomplete(tmp_path: Path) -> None:
    # Nothing left shows when a request began: the duplicates in flight are in the
    # traffic, and no overlap can be seen.
    logs = _logs(tmp_path, drop_levels=("DEBUG", "ERROR"), frontend_only=True)
    _rewrite(logs, re.compile(r'"latency_ms":"\d+",'), "")
    code, doc = _analyze(logs)
    summary = doc["summary"]
    assert summary["duplicate_in_flight"] == 0 and summary["errors"] == 0
    assert summary["incomplete_reasons"] == _instant_reasons(summary) != []
    assert code == 3 and summary["incomplete"]


def test_a_stated_duration_that_is_no_duration_is_not_used(tmp_path: Path) -> None:
    # Negative, not a number, or longer than any request: the line's own time it is.
    logs = _logs(tmp_path, drop_levels=("DEBUG", "ERROR"), frontend_only=True)
    values = iter(["-5", "NaN", "1e30", "soon"] * 10_000)
    for log in logs.glob("*.jsonl"):
        log.write_text(re.sub(r'"latency_ms":"\d+"',
                              lambda _: f'"latency_ms":"{next(values)}"', log.read_text()))
    code, doc = _analyze(logs)
    summary = doc["summary"]
    assert summary["duplicate_in_flight"] == 0 and _instant_reasons(summary) != []
    assert code == 3


def test_debug_level_frontend_logs_are_complete(tmp_path: Path) -> None:
    code, doc = _analyze(_logs(tmp_path, drop_levels=()))
    summary = doc["summary"]
    assert code == 1 and summary["duplicate_in_flight"] == 3
    assert _instant_reasons(summary) == []


def test_live_detection_starts_them_alike(tmp_path: Path) -> None:
    # The loser's one line comes before the first caller's, which ends later: the live
    # window must place the first caller by its stated start, before the loser's.
    logs = _logs(tmp_path, drop_levels=("DEBUG", "ERROR"), frontend_only=True)
    found, _ = _follow(logs)
    live = sorted(f["request_id"] for f in found if f["kind"] == "duplicate_in_flight")
    _, doc = _analyze(logs)
    batch = sorted(f["request_id"] for f in doc["findings"] if f["kind"] == "duplicate_in_flight")
    assert live == batch and len(live) == 3


def test_live_detection_names_instants_as_the_batch_read_does(tmp_path: Path) -> None:
    logs = _logs(tmp_path, drop_levels=("DEBUG", "ERROR"), frontend_only=True)
    _rewrite(logs, re.compile(r'"latency_ms":"\d+",'), "")
    _, summary = _follow(logs)
    _, doc = _analyze(logs)
    assert _instant_reasons(summary) == _instant_reasons(doc["summary"]) != []
    assert summary["incomplete"]


def test_live_detection_of_debug_logs_names_no_instants(tmp_path: Path) -> None:
    _, summary = _follow(_logs(tmp_path, drop_levels=()))
    assert _instant_reasons(summary) == []


def _frontend_line(time: str, message: str, span: str, trace: str, *,
                   request_id: str = "r1", target: str = "request_span", **extra: str) -> str:
    """One Dynamo frontend (``http-request``) span's line at INFO level."""
    return json.dumps({
        "time": time, "level": "INFO", "target": target, "message": message, **extra,
        "request_id": request_id, "span_id": span, "span_name": "http-request",
        "trace_id": trace, "method": "POST", "uri": "/v1/chat/completions",
    })


def _response_sent(time: str, request_id: str, span: str, trace: str, latency_ms: int) -> str:
    return _frontend_line(time, "http response sent", span, trace, request_id=request_id,
                          target="dynamo_llm::http::service::service_v2",
                          latency_ms=str(latency_ms), status="200")


def test_live_detection_takes_a_response_line_as_its_span_closed(tmp_path: Path) -> None:
    # At INFO level "http response sent" is a request's one line, and it closes the
    # request. An id reused back to back (the first request over before the second
    # began) is no duplicate: live, the first request was held open for good, and every
    # later request with its id was printed as one, where `analyze` found none.
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "frontend.jsonl").write_text("\n".join([
        _response_sent("2026-10-02T14:00:01.000000Z", "again", "a" * 16, "1" * 32, 100),
        _response_sent("2026-10-02T14:00:01.500000Z", "again", "b" * 16, "2" * 32, 100),
        _response_sent("2026-10-02T14:00:03.000000Z", "other", "c" * 16, "3" * 32, 100),
    ]) + "\n")
    code, doc = _analyze(logs)
    assert code == 0 and doc["findings"] == []
    found, summary = _follow(logs)
    assert found == [] and summary["errors"] == 0


def test_a_span_created_line_starts_its_span(tmp_path: Path) -> None:
    # DYN_LOGGING_SPAN_EVENTS=1 at INFO level, the response line stating no latency: each
    # request is its SPAN_CREATED and its last line. Read without the first, each started
    # where it ended, and two requests that held r1 at once never overlapped.
    a, b = ("a" * 16, "1" * 32), ("b" * 16, "2" * 32)
    (tmp_path / "frontend.jsonl").write_text("\n".join([
        _frontend_line("2026-10-02T14:03:11.000000Z", "SPAN_CREATED", *a),
        _frontend_line("2026-10-02T14:03:11.100000Z", "SPAN_CREATED", *b),
        _frontend_line("2026-10-02T14:03:11.900000Z", "http response sent", *a),
        _frontend_line("2026-10-02T14:03:12.000000Z", "http response sent", *b),
    ]) + "\n")
    code, doc = _analyze(tmp_path)
    assert [f["span_id"] for f in doc["findings"] if f["kind"] == "duplicate_in_flight"] == [a[0]]
    assert code == 1 and not doc["summary"]["incomplete"]
    found, summary = _follow(tmp_path)
    assert [f["kind"] for f in found] == ["duplicate_in_flight"] and not summary["incomplete"]


def test_a_span_first_entry_line_starts_its_span(tmp_path: Path) -> None:
    # Newer Dynamo releases write a span's first line as SPAN_FIRST_ENTRY (from on_enter,
    # under the span's own target) where older ones wrote SPAN_CREATED. A caller still
    # in flight when the logs were taken is that line alone: read as no evidence, it was
    # no request at all, and the live follower passed the second holder of its id clean.
    a, b = ("a" * 16, "1" * 32), ("b" * 16, "2" * 32)
    first = {"target": "dynamo_runtime::logging"}
    (tmp_path / "frontend.jsonl").write_text("\n".join([
        _frontend_line("2026-10-02T14:03:11.000000Z", "SPAN_FIRST_ENTRY", *a, **first),
        _frontend_line("2026-10-02T14:03:11.100000Z", "SPAN_FIRST_ENTRY", *b, **first),
        _frontend_line("2026-10-02T14:03:11.900000Z", "http response sent", *a),
        _frontend_line("2026-10-02T14:03:12.000000Z", "http response sent", *b),
        _frontend_line("2026-10-02T14:03:13.000000Z", "SPAN_FIRST_ENTRY", "c" * 16, "3" * 32,
                       request_id="r2", **first),
        _frontend_line("2026-10-02T14:03:13.500000Z", "SPAN_FIRST_ENTRY", "d" * 16, "4" * 32,
                       request_id="r2", **first),
        _frontend_line("2026-10-02T14:03:13.600000Z", "http response sent", "d" * 16, "4" * 32,
                       request_id="r2", latency_ms="100"),
    ]) + "\n")
    code, doc = _analyze(tmp_path)
    assert [f["span_id"] for f in doc["findings"] if f["kind"] == "duplicate_in_flight"] == [a[0]]
    assert code == 1 and doc["summary"]["requests"] == 4
    found, summary = _follow(tmp_path)
    # Live, the caller c is still open when d takes r2: a duplicate the batch read, which
    # holds an unended request to its last line, does not see.
    assert sorted(f["span_id"] for f in found) == [a[0], "c" * 16]
    assert summary["requests"] == 4


def test_requests_still_in_flight_are_no_instants(tmp_path: Path) -> None:
    # ridtrace's logs read while the frontend runs: most callers have logged their
    # request.start and are still streaming. Their one line is where they began, not a
    # closing line with no stated start, yet the read was named incomplete (exit 3) as
    # "Dynamo at INFO level?", telling the user to log at DEBUG, batch and live alike.
    from tests.forensics.helpers import rt, rt_request, ts

    lines = [line for i in range(3) for line in rt_request(f"{i + 1:x}", f"r{i}", i, i + 0.5)]
    for i in range(4):
        ctx = {"request_id": f"open-{i}", "trace_id": f"a{i}".rjust(32, "0"), "span_id": f"a{i}"}
        lines.append(rt("request.start", time=ts(4 + i), **ctx, method="POST",
                        path="/v1/chat/completions", client="10.0.0.1:5000"))
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    code, doc = _analyze(tmp_path)
    assert _instant_reasons(doc["summary"]) == []
    assert code == 0
    _, summary = _follow(tmp_path)
    assert _instant_reasons(summary) == []
