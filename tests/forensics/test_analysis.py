"""End to end through the library: generated logs with known faults, and the Dynamo sample."""

from __future__ import annotations

from pathlib import Path

import pytest

from ridtrace.forensics.reading.events import load_events
from ridtrace.forensics.rules.report import analyze, report_json
from ridtrace.testing.synth import SynthSpec, write_logs
from tests.forensics.helpers import FINDING_KEY

SAMPLE = Path("/work/shared/samples/dynamo-jsonl-sample.jsonl")


def _found(report_doc: dict[str, object]) -> set[tuple[str, str]]:
    return {(f["kind"], f[FINDING_KEY[f["kind"]]]) for f in report_doc["findings"]}  # type: ignore[attr-defined,index]


@pytest.mark.parametrize(
    "spec",
    [
        SynthSpec(requests=300),
        SynthSpec(requests=500, seed=3, workers=3, crossed=3, collisions=2, duplicates=2,
                  client_reuse=2, deprecated_every=25),
    ],
)
def test_injected_faults_all_found_none_invented(tmp_path: Path, spec: SynthSpec) -> None:
    truth = write_logs(tmp_path, spec)
    report = analyze(load_events([str(tmp_path)], lean=True))
    doc = report_json(report)
    assert _found(doc) == truth.expected
    assert doc["summary"]["lines"] == truth.lines
    assert doc["summary"]["requests"] == truth.requests
    assert doc["summary"]["bad_lines"] == 0
    assert report.has_errors


def test_clean_run_has_no_error_findings(tmp_path: Path) -> None:
    spec = SynthSpec(requests=300, crossed=0, collisions=0, duplicates=0, client_reuse=0,
                     deprecated_every=0)
    truth = write_logs(tmp_path, spec)
    report = analyze(load_events([str(tmp_path)]))
    assert truth.expected == set()
    assert report.findings.empty and not report.has_errors


def test_only_worker_logs_invent_no_lost_output(tmp_path: Path) -> None:
    truth = write_logs(tmp_path, SynthSpec(requests=200))
    workers = [str(p) for p in truth.files[1:]]
    doc = report_json(analyze(load_events(workers)))
    kinds = {f["kind"] for f in doc["findings"]}
    assert "unlinked" not in kinds and "crossed_stream" not in kinds
    # the legacy duplicates are still visible from the workers' side
    assert {k for k in truth.expected if k[0] == "duplicate_in_flight"} <= _found(doc)


def test_dynamo_sample_findings() -> None:
    doc = report_json(analyze(load_events([str(SAMPLE)])))
    summary = doc["summary"]
    assert summary["lines"] == 9 and summary["bad_lines"] == 0
    assert summary["unlinked"] == 1 and summary["deprecated_header"] == 2
    assert summary["crossed_stream"] == summary["duplicate_in_flight"] == 0
    unlinked = [f for f in doc["findings"] if f["kind"] == "unlinked"]
    assert unlinked[0]["request_id"] == "1"
    assert unlinked[0]["evidence"] == [{"file": str(SAMPLE), "line": 7}]
    details = {f["detail"] for f in doc["findings"] if f["kind"] == "deprecated_header"}
    assert details == {
        "sent deprecated header x-dynamo-request-id",
        "sent deprecated header request-id",
    }


def _dyn(time: str, span: str, rid: str, msg: str, **kw: str) -> str:
    import json

    line = {"time": time, "level": "DEBUG", "target": "dynamo_llm::http::service::metrics",
            "message": msg, "request_id": rid, "x_request_id": rid, "span_id": span,
            "span_name": "generate", "trace_id": span * 2, "uri": "/inference/v1/generate"}
    line.update(kw)
    return json.dumps(line)


def test_dynamo_prefix_duplicates_and_sequential_reuse(tmp_path: Path) -> None:
    lines = [
        _dyn("2026-10-02T14:05:00.000000Z", "a" * 16, "1", "request received"),
        _dyn("2026-10-02T14:05:00.100000Z", "b" * 16, "1", "request received"),
        _dyn("2026-10-02T14:05:02.000000Z", "a" * 16, "1", "request completed", status="success"),
        _dyn("2026-10-02T14:05:02.110377Z", "b" * 16, "1", "engine generate call failed",
             error="Unlinked request; initiating request task was dropped or cancelled"),
        # the same id reused one after the other: not a duplicate
        _dyn("2026-10-02T14:06:00.000000Z", "c" * 16, "1", "request received"),
        _dyn("2026-10-02T14:06:01.000000Z", "c" * 16, "1", "request completed", status="success"),
    ]
    path = tmp_path / "dynamo.jsonl"
    path.write_text("\n".join(lines) + "\n")
    doc = report_json(analyze(load_events([str(path)])))
    kinds = sorted(f["kind"] for f in doc["findings"])
    assert kinds == ["duplicate_in_flight", "unlinked"]
    dup = next(f for f in doc["findings"] if f["kind"] == "duplicate_in_flight")
    assert {e["line"] for e in dup["evidence"]} == {1, 2, 3, 4}


def test_dynamo_openai_routes_log_the_unlinked_error_as_the_message(tmp_path: Path) -> None:
    # Dynamo's chat, completions, responses and messages routes log an engine error
    # through ErrorMessage::internal_server_error: the Unlinked text is the message,
    # with no error field. Only the error field was read: no finding, exit 0.
    text = "Internal server error: Failed to generate completions: "
    lines = [
        _dyn("2026-10-02T14:05:00.000000Z", "a" * 16, "1", "request received",
             span_name="http-request", uri="/v1/chat/completions"),
        _dyn("2026-10-02T14:05:00.900000Z", "a" * 16, "1",
             text + "Unlinked response; response task was dropped or cancelled",
             level="ERROR", span_name="http-request", uri="/v1/chat/completions"),
        _dyn("2026-10-02T14:05:01.000000Z", "b" * 16, "2",
             text + "Unlinked request; initiating request task was dropped or cancelled",
             level="ERROR", span_name="http-request", uri="/v1/completions"),
        # a message that only mentions the word is no error
        _dyn("2026-10-02T14:05:02.000000Z", "c" * 16, "3", "Unlinked responses: 0",
             span_name="http-request"),
    ]
    path = tmp_path / "frontend.jsonl"
    path.write_text("\n".join(lines) + "\n")
    doc = report_json(analyze(load_events([str(path)], lean=True)))
    found = [(f["kind"], f["span_id"], f["evidence"]) for f in doc["findings"]]
    assert found == [("unlinked", "a" * 16, [{"file": str(path), "line": 2}]),
                     ("unlinked", "b" * 16, [{"file": str(path), "line": 3}])]
    assert doc["findings"][0]["detail"] == text + "Unlinked response; response task was " \
        "dropped or cancelled"


def test_since_until_window(tmp_path: Path) -> None:
    from ridtrace.forensics.rules.report import parse_time

    write_logs(tmp_path, SynthSpec(requests=300))
    logs = load_events([str(tmp_path)])
    full = analyze(logs)
    late = analyze(logs, since=parse_time("2026-11-29T10:00:00.5"))
    assert late.summary["requests"] < full.summary["requests"]
    assert late.summary["lines"] < full.summary["lines"]
    none = analyze(logs, until=parse_time("2026-11-29T09:00"))
    assert none.summary["requests"] == 0 and none.findings.empty


def test_legacy_rekeyed_requests_are_duplicates(tmp_path: Path) -> None:
    """Under the legacy id policy request.start logs a minted id, later lines the client's.

    Found on a real legacy demo run: keying requests by their first request_id hid every
    duplicate (and reported them as client_id_reuse instead).
    """
    from tests.forensics.helpers import rt, ts

    lines = []
    for span, minted, start in (("a" * 16, "uuid-a", 0.0), ("b" * 16, "uuid-b", 0.1)):
        ctx = {"trace_id": span * 2, "span_id": span, "x_request_id": "rollout-7"}
        lines += [
            rt("request.start", time=ts(start), request_id=minted, **ctx),
            rt("request.end", time=ts(start + 1), request_id="rollout-7", status=200,
               outcome="ok", id_policy="legacy", **ctx),
        ]
    path = tmp_path / "frontend.jsonl"
    path.write_text("\n".join(sorted(lines, key=lambda x: x[9:40])) + "\n")
    doc = report_json(analyze(load_events([str(path)])))
    assert [(f["kind"], f["request_id"]) for f in doc["findings"]] == [
        ("duplicate_in_flight", "rollout-7")
    ]


def test_legacy_rekeyed_requests_logged_newest_first_are_duplicates(tmp_path: Path) -> None:
    """Loki's ``logcli query`` prints newest first unless ``--forward``: a request's last
    line in the file is its first in time. Taking the id a request ends with by line
    order took the minted id of its request.start, and the two callers that held
    ``rollout-7`` at once were reported as info client_id_reuse, exit 0."""
    from tests.forensics.helpers import rt, ts

    lines = []
    for span, minted, start in (("a" * 16, "uuid-a", 0.0), ("b" * 16, "uuid-b", 0.1)):
        ctx = {"trace_id": span * 2, "span_id": span, "x_request_id": "rollout-7"}
        lines += [
            (start, rt("request.start", time=ts(start), request_id=minted, **ctx)),
            (start + 0.01, rt("dispatch.attempt", time=ts(start + 0.01),
                              request_id="rollout-7", **ctx)),
            (start + 1, rt("request.end", time=ts(start + 1), request_id="rollout-7",
                           status=200, outcome="ok", id_policy="legacy", **ctx)),
        ]
    path = tmp_path / "frontend.jsonl"
    path.write_text("".join(
        f'{ts(t)} {{app="frontend"}} {line}\n' for t, line in sorted(lines, reverse=True)
    ))
    doc = report_json(analyze(load_events([str(path)])))
    assert [(f["kind"], f["request_id"]) for f in doc["findings"]] == [
        ("duplicate_in_flight", "rollout-7")
    ]


@pytest.mark.parametrize("lean", [True, False])
def test_dynamo_requests_that_sent_x_dynamo_request_id_are_counted(
    tmp_path: Path, lean: bool
) -> None:
    # Dynamo releases before the fix wrote no WARN for the header: they took a client's
    # x-dynamo-request-id (a UUID) as the request's id and record it on its http-request
    # span, so each of its lines names it as x_dynamo_request_id. Read without it, an
    # audit of the very logs a header's removal is planned from said nobody sent it.
    sent = {"x_dynamo_request_id": "5c3d5e1a-0b7e-4b8f-9d2a-7f1e2d3c4b5a"}
    front = {"span_name": "http-request", "uri": "/v1/chat/completions"}
    lines = [
        _dyn("2026-10-02T14:05:00.000000Z", "a" * 16, "1", "request received", **front, **sent),
        _dyn("2026-10-02T14:05:00.100000Z", "b" * 16, "2", "request received", **front),
        _dyn("2026-10-02T14:05:00.200000Z", "a" * 16, "1", "SPAN_CLOSED", **front, **sent),
        _dyn("2026-10-02T14:05:00.300000Z", "b" * 16, "2", "SPAN_CLOSED", **front),
        # the worker span of the request that sent it carries it too: still one request
        _dyn("2026-10-02T14:05:00.050000Z", "c" * 16, "1", "request received",
             span_name="handle_payload", parent_id="a" * 16, trace_id="a" * 32, **sent),
    ]
    path = tmp_path / "frontend.jsonl"
    path.write_text("\n".join(lines) + "\n")
    doc = report_json(analyze(load_events([str(path)], lean=lean)))
    found = [(f["kind"], f["span_id"], f["detail"], f["evidence"]) for f in doc["findings"]]
    assert found == [("deprecated_header", "a" * 16, "sent deprecated header x-dynamo-request-id",
                      [{"file": str(path), "line": 1}])]
