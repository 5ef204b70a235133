"""What the demo says when the collector rejected some of the spans sent to it."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from rich.console import Console

from ridtrace.demo.main import _next_steps
from ridtrace.demo.plan import CallResult, PlannedCall
from ridtrace.demo.rejections import METRICS, SpanRejections
from ridtrace.demo.run import PolicyRun
from ridtrace.tracing.otlp import otlp_exporter
from tests.frontend_plugin.conftest import exporting_frontend
from tests.support.otlp_receiver import otlp_receiver

SAID = "rejected 2 spans of an export: over quota"
# As the demo's calls send one (`plan.with_own_traces`): a sampled caller.
_TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def _export_one_span(endpoint: str, env: dict[str, str] | None = None) -> Any:
    """One finished span through an OTLP/HTTP exporter to `endpoint` (a collector's
    base URL), shut down after; the export's result."""
    span = TracerProvider().get_tracer("t").start_span("s")
    span.end()
    exporter = otlp_exporter(env or {}, "traces", endpoint + "/v1/traces")
    try:
        return exporter.export([span])  # type: ignore[list-item]
    finally:
        exporter.shutdown()


def test_a_rejection_the_demos_own_exporter_got_is_found(tmp_path: Path) -> None:
    rejections = SpanRejections()
    with otlp_receiver(rejecting=(2, "over quota")) as receiver:
        _export_one_span(receiver.endpoint)
    assert rejections.first(tmp_path) == f"OTLP endpoint {receiver.endpoint}/v1/traces {SAID}"


def test_a_rejection_a_process_of_the_stack_logged_is_found(tmp_path: Path) -> None:
    logs = tmp_path / "safe" / "logs"
    logs.mkdir(parents=True)
    with otlp_receiver(rejecting=(2, "over quota")) as receiver, \
            exporting_frontend(logs, receiver.endpoint):
        pass  # its SIGTERM flushes its spans (its health checks')
    assert receiver.spans
    rejections = SpanRejections()  # after: only the log can tell
    said = rejections.first(tmp_path)
    assert said is not None and said.endswith(f"/v1/traces {SAID}"), said
    assert SpanRejections().first(tmp_path / "elsewhere") is None


def test_spans_a_collector_rejected_are_not_said_to_be_exported(tmp_path: Path) -> None:
    # The demo ended with "spans were exported to …, in Jaeger search tags …" whatever
    # the collector answered: one that rejected some left traces with holes.
    call = PlannedCall(1, "/v1/completions", True, "p1", {"x-request-id": "c-1", "traceparent": _TRACEPARENT}, None,
                       False, "t1")
    safe = PolicyRun("safe", tmp_path, [CallResult(call, 200, server_request_id="r-1")], 0)
    endpoint = "http://collector:4318/v1/traces"
    for rejected, said, kept in ((None, "exported", ""),
                                 (f"OTLP endpoint {endpoint} {SAID}", "sent",
                                  "where the collector kept them, ")):
        console = Console(record=True, width=400)
        _next_steps(console, tmp_path, safe, tmp_path / "traces.json", None, endpoint, rejected)
        text = console.export_text()
        assert f"spans were {said} to {endpoint}: {kept}in Jaeger search tags request_id=r-1" \
            in text, text
        assert ("did not keep them all" in text) is (rejected is not None), text
        if rejected:
            # "not all were kept" said some were: a collector answering 500 kept none.
            assert ("but the collector did not keep them all (perhaps none): "
                    f"OTLP endpoint {endpoint} {SAID}") in text
            assert "exported" not in text and "not all were kept" not in text


def test_metrics_a_collector_did_not_take_are_said_so(tmp_path: Path) -> None:
    # Every process logged "Failed to export metrics batch code: 500"; the demo's last
    # lines said nothing of metrics.
    call = PlannedCall(1, "/v1/completions", True, "p1", {"x-request-id": "c-1", "traceparent": _TRACEPARENT}, None,
                       False, "t1")
    safe = PolicyRun("safe", tmp_path, [CallResult(call, 200, server_request_id="r-1")], 0)
    logs = tmp_path / "safe" / "logs"
    logs.mkdir(parents=True)
    (logs / "frontend.jsonl").write_text(
        '{"level": "ERROR", "logger": "opentelemetry.exporter.otlp.common.http", '
        '"message": "Failed to export metrics batch code: 500, reason: boom", '
        '"schema": "ridtrace/1"}\n')
    lost = SpanRejections().first(tmp_path, METRICS)
    assert lost == "Failed to export metrics batch code: 500, reason: boom"
    console = Console(record=True, width=400)
    _next_steps(console, tmp_path, safe, tmp_path / "traces.json", None,
                "http://collector:4318/v1/traces", None, lost)
    assert ("metrics were sent, but the collector did not take them all (perhaps none): "
            "Failed to export metrics batch code: 500") in console.export_text()


def test_next_steps_print_paths_and_endpoints_as_they_are(tmp_path: Path) -> None:
    # Printed as markup, "[a]" in an --out path and "[::1]" in an IPv6 endpoint were
    # dropped; at 80 columns the search tags broke across two lines.
    call = PlannedCall(1, "/v1/completions", True, "p1", {"x-request-id": "rollout-9", "traceparent": _TRACEPARENT}, None,
                       False, "t1")
    safe = PolicyRun("safe", tmp_path, [CallResult(call, 200, server_request_id="r-1")], 0)
    out = tmp_path / "[a]"
    endpoint = "http://[::1]:4318/v1/traces"
    console = Console(record=True, width=80)
    _next_steps(console, out, safe, out / "traces.json", out / "plot.png", endpoint, None)
    lines = console.export_text().splitlines()
    assert f"  Jaeger UI → Search → JSON File → {out / 'traces.json'}" in lines
    assert f"  deprecated-header plot: {out / 'plot.png'}" in lines
    assert (f"  spans were exported to {endpoint}: in Jaeger search tags request_id=r-1 or "
            "x_request_id=rollout-9") in lines


def test_next_steps_say_why_no_plot_was_drawn(tmp_path: Path) -> None:
    # A plain `pip install ridtrace` has no matplotlib: the plot was left out silently.
    call = PlannedCall(1, "/v1/completions", True, "p1", {}, None, False, "t1")
    safe = PolicyRun("safe", tmp_path, [CallResult(call, 200, server_request_id="r-1")], 0)
    console = Console(record=True, width=200)
    _next_steps(console, tmp_path, safe, tmp_path / "traces.json", None, None, None)
    assert "not drawn (it needs the plot extra: pip install 'ridtrace[plot]')" in (
        console.export_text())


def test_an_export_that_failed_is_found_here_and_in_the_stacks_logs(tmp_path: Path) -> None:
    # A collector that accepted connections and never answered: every export failed
    # ("Failed to export spans batch due to timeout …"), and the demo still said
    # "spans were exported to …".
    from tests.support.otlp_receiver import unresponsive_collector

    rejections = SpanRejections()
    with unresponsive_collector() as endpoint:
        _export_one_span(endpoint, {"OTEL_EXPORTER_OTLP_TIMEOUT": "0.5"})
    said = rejections.first(tmp_path)
    assert said is not None and said.startswith("Failed to export spans"), said
    logs = tmp_path / "safe" / "logs"
    logs.mkdir(parents=True)
    (logs / "frontend.jsonl").write_text(
        '{"level": "ERROR", "logger": "opentelemetry.exporter.otlp.common.http", '
        '"message": "Failed to export spans batch due to timeout, max retries or '
        'shutdown.", "schema": "ridtrace/1"}\n'
        '{"level": "ERROR", "logger": "opentelemetry.exporter.otlp.common.http", '
        '"message": "Failed to export metrics batch code: 404", "schema": "ridtrace/1"}\n')
    later = SpanRejections().first(tmp_path)
    assert later is not None and later.startswith("Failed to export spans batch"), later
    (logs / "frontend.jsonl").write_text(
        '{"level": "ERROR", "logger": "opentelemetry.exporter.otlp.common.http", '
        '"message": "Failed to export metrics batch code: 404", "schema": "ridtrace/1"}\n')
    assert SpanRejections().first(tmp_path) is None  # metrics are not the spans


def _call(index: int, trace_low: str) -> CallResult:
    trace_id = "0af7651916cd43dd" + trace_low
    call = PlannedCall(index, "/v1/completions", True, f"p{index}",
                       {"x-request-id": f"c-{index}",
                        "traceparent": f"00-{trace_id}-b7ad6b7169203331-01"},
                       None, False, trace_id)
    return CallResult(call, 200, server_request_id=f"r-{index}")


def test_the_request_named_for_jaeger_is_one_the_sampler_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Under OTEL_TRACES_SAMPLER=traceidratio the demo named the first request whatever
    # the sampler made of it: the Jaeger search it suggested found nothing in most runs.
    # A ratio sampler keeps a trace id whose low 64 bits are below the ratio's share.
    safe = PolicyRun("safe", tmp_path, [_call(1, "ffffffffffffffff"),
                                        _call(2, "0000000000000001")], 0)
    endpoint = "http://collector:4318/v1/traces"
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "traceidratio")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", "0.5")
    console = Console(record=True, width=400)
    _next_steps(console, tmp_path, safe, tmp_path / "traces.json", None, endpoint, None)
    assert "search tags request_id=r-2 or x_request_id=c-2" in console.export_text()
    # None kept: nothing is said to be exported, and no search is suggested.
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_off")
    console = Console(record=True, width=400)
    _next_steps(console, tmp_path, safe, tmp_path / "traces.json", None, endpoint, None)
    text = console.export_text()
    assert "exported" not in text and "search tags" not in text, text
    assert ("no trace of these requests was sampled (OTEL_TRACES_SAMPLER=always_off): "
            "nothing to search for in Jaeger") in text


def test_a_failed_export_is_noted_and_not_printed_between_the_demos_tables() -> None:
    # The demo's own exporter's "Failed to export spans batch code: 500" reached stderr
    # twice, between the tables; the demo's last lines say it once, in its own words.
    rejections = SpanRejections()
    name = "opentelemetry.exporter.otlp.proto.http.trace_exporter"
    failed = logging.LogRecord(name, logging.ERROR, __file__, 1,
                               "Failed to export spans batch code: 500, reason: boom", None, None)
    other = logging.LogRecord(name, logging.WARNING, __file__, 1, "something else", None, None)
    try:
        assert rejections.filter(failed) is False
        assert rejections.filter(other) is True
    finally:
        assert rejections.first(Path("/nonexistent")) == (
            "Failed to export spans batch code: 500, reason: boom")


def test_a_collectors_message_reaches_the_demos_lines_escaped(tmp_path: Path) -> None:
    # The collector's partial-success text was printed raw: a line break and an escape
    # sequence of its choosing reached the user's terminal.
    rejections = SpanRejections()
    with otlp_receiver(rejecting=(2, "over quota\nFAKE \x1b[31mred")) as receiver:
        _export_one_span(receiver.endpoint)
    said = rejections.first(tmp_path)
    assert said is not None and said.endswith("over quota\\nFAKE \\x1b[31mred"), said


def test_an_exporters_retries_are_not_printed(tmp_path: Path,
                                              caplog: pytest.LogCaptureFixture) -> None:
    # A collector answering 503 (Retry-After) made the exporter log "Transient error …
    # retrying" ten times on the demo's stderr, which the demo then said in a line of
    # its own; the spans it got in the end are kept.
    import http.server
    import threading

    answers = iter([503, 200])

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            self.send_response(next(answers, 200))
            self.send_header("retry-after", "0")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    rejections = SpanRejections()
    try:
        with caplog.at_level(logging.DEBUG):
            done = _export_one_span(f"http://127.0.0.1:{server.server_address[1]}")
            assert done.name == "SUCCESS"
    finally:
        server.shutdown()
    assert not [r for r in caplog.records if "Transient error" in r.getMessage()]
    assert rejections.first(tmp_path) is None
