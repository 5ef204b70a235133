"""The demo callers' CLIENT spans as an OTLP backend reads them: the HTTP client
semantic conventions' required attributes, and why a call failed."""

from __future__ import annotations

import time
from pathlib import Path

from ridtrace.demo.callers import CallerSpans
from ridtrace.demo.plan import CallResult, make_plan
from ridtrace.demo.traffic import send_traffic
from tests.frontend_plugin.conftest import _spawn
from tests.support.otlp_receiver import otlp_receiver, unresponsive_collector
from tests.support.servers import free_port, stop_process, wait_until_serving

# OpenTelemetry's HTTP client span: `server.address`, `server.port` and `url.full` are
# required, and `error.type` whenever the call ended in an error (a 4xx or 5xx answer, or
# no answer at all: the exception's class). Without them a backend's service graph and
# its error breakdowns have nothing to name the callee or the failure by.


def test_client_spans_name_the_server_the_url_and_the_error(tmp_path: Path) -> None:
    # A worker serves none of the inference routes the plan calls: each call is a real 404.
    worker = _spawn(["worker"], tmp_path, "worker")
    plan = make_plan(12)[:2]
    with otlp_receiver() as receiver:
        try:
            wait_until_serving(worker.url, worker.process, timeout=60, path="/health")
            spans = CallerSpans({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint})
            answered = send_traffic(worker.url, plan[:1], concurrency=1, spans=spans)
            closed = f"http://127.0.0.1:{free_port()}"  # nothing listens: no answer at all
            refused = send_traffic(closed, plan[1:], concurrency=1, spans=spans)
            spans.shutdown()
        finally:
            stop_process(worker.process)
        got = {s.trace_id: s for s in receiver.wait_for(2, timeout=20)}
    assert answered[0].status == 404 and refused[0].status == 0

    not_found = got[plan[0].trace_id]
    assert not_found.kind == 3 and not_found.status_code == 2  # CLIENT, ERROR
    assert not_found.attributes["url.full"] == worker.url + plan[0].route
    assert not_found.attributes["server.address"] == "127.0.0.1"
    assert not_found.attributes["server.port"] == worker.port
    assert not_found.attributes["http.response.status_code"] == 404
    assert not_found.attributes["error.type"] == "404"

    no_answer = got[plan[1].trace_id]
    assert no_answer.status_code == 2
    assert no_answer.attributes["url.full"] == closed + plan[1].route
    assert no_answer.attributes["server.port"] == int(closed.rsplit(":", 1)[1])
    assert "http.response.status_code" not in no_answer.attributes
    assert no_answer.attributes["error.type"] == "ConnectError"


def test_a_hung_collector_holds_the_callers_shutdown_for_one_export_timeout() -> None:
    # The callers' spans go out a batch at a time when the run ends, and each batch
    # waited the exporter's whole timeout on a collector that never answers: a backlog
    # of batches held every run's end that many timeouts (a full queue is four batches
    # of 512, so 40 s per run by default), where the stack's own processes stop after
    # one (tracing.md, Nothing lost at shutdown). Batches of one span make each call a
    # batch; the exporter's timeout is one second.
    with unresponsive_collector() as endpoint:
        spans = CallerSpans({
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
            "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "1", "OTEL_BSP_SCHEDULE_DELAY": "120000",
        })
        for call in make_plan(12)[:8]:
            spans.end(spans.start(call, endpoint), CallResult(call, status=200))
        started = time.monotonic()
        spans.shutdown()
        took = time.monotonic() - started
    # One export timeout and a margin (8 s or more, one per batch, before).
    assert took < 5, f"the callers' shutdown took {took:.1f} s"


def test_a_caller_that_walked_away_after_a_500_still_failed() -> None:
    # A legacy-run caller that hangs up on purpose records no error of its own: its
    # span had no error.type and an unset status beside its frontend's ERROR span.
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    call = make_plan(1)[0]
    span = provider.get_tracer("test").start_span("POST")
    CallerSpans.end(span, CallResult(call, status=500, disconnected=True))
    (ended,) = exporter.get_finished_spans()
    assert ended.status.status_code.value == 2  # ERROR
    assert (ended.attributes or {})["error.type"] == "500"
