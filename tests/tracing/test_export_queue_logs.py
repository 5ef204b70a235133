"""What the batch span processor logs about its queue names no request."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from ridtrace.tracing import configure_tracing, shutdown_telemetry
from ridtrace.tracing.context import RequestContext, enter, leave
from ridtrace.tracing.logs import configure_logging
from tests.support.otlp_receiver import unresponsive_collector
from tests.tracing.conftest import read_lines

pytestmark = pytest.mark.usefixtures("telemetry_shut_down")


def _end_three_spans_in_a_request() -> None:
    with unresponsive_collector() as url:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_BSP_MAX_QUEUE_SIZE": "1",
               "OTEL_EXPORTER_OTLP_TIMEOUT": "0.3"}
        provider = configure_tracing("svc", environ=env, set_global=False)
        token = enter(RequestContext(request_id="req-1", trace_id="a" * 32, span_id="b" * 16))
        try:
            # One in the export the collector never answers, one queued: a third is
            # one too many whichever the worker has taken yet.
            for _ in range(3):
                provider.get_tracer("t").start_span("s").end()
            logging.getLogger("app").warning("the request's own")
        finally:
            leave(token)
        shutdown_telemetry()


def test_a_full_span_queue_is_logged_without_the_ids_of_the_request_that_ended_a_span(
    tmp_path: Path,
) -> None:
    # The SDK logs "Queue full, dropping Span." in the thread that ends a span, inside its
    # request: the line carried that request's ids, though the span dropped is the oldest
    # one queued (any request's) and the queue is the service's.
    for duplicates in logging.getLogger("opentelemetry.sdk._shared_internal").filters:
        vars(duplicates).pop("last_log", None)  # the SDK's filter says a line once in 20 s
    log_file = tmp_path / "app.jsonl"
    configure_logging(log_file, service="svc")  # the SDK's records through the bridge
    try:
        _end_three_spans_in_a_request()
    finally:
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)
    lines = read_lines(log_file)
    # Once, or twice when the export thread had not yet taken the first span (two drops;
    # the SDK's once-in-20-s filter does not always fold them): every one without ids.
    full = [line for line in lines if line["message"].startswith("Queue full")]
    assert 1 <= len(full) <= 2, full
    for line in full:
        assert line["level"] == "WARN"
        assert not {"request_id", "trace_id", "span_id"} & line.keys()
    (own,) = [line for line in lines if line["message"] == "the request's own"]
    assert (own["request_id"], own["span_id"]) == ("req-1", "b" * 16)
