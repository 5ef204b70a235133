"""The caller's whole trace context (tracestate, baggage) reaches the worker, on real processes."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.frontend_plugin.conftest import Proc, Stack, start_stack
from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan, otlp_receiver

SERVER = 2  # SpanKind.SERVER in OTLP's enum
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


def _server_spans(spans: list[ReceivedSpan], request_id: str) -> dict[str, ReceivedSpan]:
    mine = [s for s in spans if s.kind == SERVER and s.attributes.get("request_id") == request_id]
    return {("frontend" if s.service_name == "frontend" else "worker"): s for s in mine}


@pytest.fixture(scope="module")
def exporting(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Stack, OtlpReceiver]]:
    """A stack exporting to a receiver (default propagators), its worker copying the
    baggage entries tenant and user: the tests below send requests of their own ids and
    traces, so one stack serves them all (a stack start is ~2.6 CPU-s of imports)."""
    with otlp_receiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50"}
        with start_stack(
            tmp_path_factory.mktemp("exporting"), env=env,
            workers=[["--baggage-attribute", "tenant", "--baggage-attribute", "user"]],
        ) as stack:
            yield stack, receiver


def test_tracestate_and_baggage_reach_the_worker(exporting: tuple[Stack, OtlpReceiver]) -> None:
    stack, receiver = exporting
    response = httpx.post(
        stack.url + "/v1/chat/completions",
        json={"model": "echo", "messages": [{"role": "user", "content": "carry it"}]},
        headers={
            "traceparent": f"00-{TRACE_ID}-{CALLER_SPAN}-01",
            "tracestate": "vendor=opaque-7,other=x",
            "baggage": "tenant=acme-corp,session=s1",
        },
        timeout=30,
    )
    assert response.status_code == 200
    request_id = response.headers["x-server-request-id"]
    spans = receiver.wait_until(lambda spans: len(_server_spans(spans, request_id)) == 2)
    found = _server_spans(spans, request_id)
    frontend, worker = found["frontend"], found["worker"]
    assert frontend.trace_id == worker.trace_id == TRACE_ID
    assert frontend.parent_span_id == CALLER_SPAN and worker.parent_span_id == frontend.span_id
    assert worker.trace_state == frontend.trace_state == "vendor=opaque-7,other=x"
    assert worker.attributes["baggage.tenant"] == "acme-corp"
    assert "baggage.session" not in worker.attributes  # only the names asked for


def test_a_baggage_entrys_properties_are_no_part_of_its_value(
    exporting: tuple[Stack, OtlpReceiver],
) -> None:
    # W3C baggage puts an entry's properties after its value (`key=value;prop=x`), and
    # OpenTelemetry's propagator keeps them in the value it extracts: the worker span's
    # baggage.tenant read "acme-corp;region=eu", so a search for tenant acme-corp missed
    # every request from a caller (a .NET or Go SDK, a gateway) that sends properties.
    stack, receiver = exporting
    response = httpx.post(
        stack.url + "/v1/chat/completions",
        json={"model": "echo", "messages": [{"role": "user", "content": "props"}]},
        headers={"baggage": "tenant=acme-corp ; region=eu;sticky, user=Alice%20B;p"},
        timeout=30,
    )
    assert response.status_code == 200
    request_id = response.headers["x-server-request-id"]
    spans = receiver.wait_until(lambda spans: "worker" in _server_spans(spans, request_id))
    worker = _server_spans(spans, request_id)["worker"]
    assert worker.attributes["baggage.tenant"] == "acme-corp"
    assert worker.attributes["baggage.user"] == "Alice B"


def test_a_trace_the_caller_sampled_out_is_not_recorded_by_the_worker(
    exporting: tuple[Stack, OtlpReceiver],
) -> None:
    # The frontend's parent-based sampler honours the caller's unsampled flag; the hop
    # named the trace sampled all the same, and every worker span was exported as an
    # orphan whose parent never reached the collector.
    unsampled_trace = "5" * 32
    stack, receiver = exporting
    body = {"model": "echo", "messages": [{"role": "user", "content": "sampled?"}]}
    unsampled = httpx.post(
        stack.url + "/v1/chat/completions", json=body, timeout=30,
        headers={"traceparent": f"00-{unsampled_trace}-{CALLER_SPAN}-00"},
    )
    assert unsampled.status_code == 200
    # A sampled request after it: once both of its spans arrived, the worker
    # exported whatever it recorded of the first one (same batch or earlier).
    sampled = httpx.post(
        stack.url + "/v1/chat/completions", json=body, timeout=30,
        headers={"traceparent": f"00-{TRACE_ID}-{CALLER_SPAN}-01"},
    )
    request_id = sampled.headers["x-server-request-id"]
    spans = receiver.wait_until(lambda spans: len(_server_spans(spans, request_id)) == 2)
    assert [s for s in spans if s.trace_id == unsampled_trace] == []


# OTEL_PROPAGATORS=b3: B3's single header, `trace-span-sampled`.
B3_ENV = {"OTEL_PROPAGATORS": "b3", "OTEL_BSP_SCHEDULE_DELAY": "50"}


def _lines(proc: Proc, request_id: str) -> list[dict[str, object]]:
    return [line for line in proc.lines() if line.get("request_id") == request_id]


def test_a_b3_callers_trace_is_on_every_line_without_a_collector(tmp_path: Path) -> None:
    # With no span recording the request, only a traceparent was read: a b3 caller's
    # frontend and worker lines named a trace ridtrace minted, not the caller's.
    with start_stack(tmp_path, workers=[[]], env=B3_ENV) as stack:
        response = httpx.post(
            stack.url + "/v1/chat/completions",
            json={"model": "echo", "messages": [{"role": "user", "content": "b3 caller"}]},
            headers={"b3": f"{TRACE_ID}-{CALLER_SPAN}-1"}, timeout=30,
        )
        request_id = response.headers["x-server-request-id"]
        end = stack.frontend.wait_for_event(request_id, "request.end")
        stack.workers[0].wait_for_event(request_id, "worker.end")
        worker_lines = _lines(stack.workers[0], request_id)
    frontend_lines = _lines(stack.frontend, request_id)
    assert {line["trace_id"] for line in frontend_lines + worker_lines} == {TRACE_ID}
    assert end["parent_span_id"] == CALLER_SPAN
    assert {line["parent_span_id"] for line in worker_lines} == {end["span_id"]}


def test_a_recording_b3_worker_continues_a_frontend_that_records_nothing(
    tmp_path: Path,
) -> None:
    # The frontend (no collector) sent only its minimal traceparent, which a worker
    # extracting b3 ignored: the worker's span and lines started a trace of their own,
    # and a trace the caller sampled out was exported by the worker as a root.
    unsampled_trace = "6" * 32
    with otlp_receiver() as receiver:
        worker_env = {**B3_ENV, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
        with start_stack(tmp_path, workers=[[]], env=B3_ENV, worker_env=worker_env) as stack:
            body = {"model": "echo", "messages": [{"role": "user", "content": "b3 hop"}]}
            unsampled = httpx.post(stack.url + "/v1/chat/completions", json=body, timeout=30,
                                   headers={"b3": f"{unsampled_trace}-{CALLER_SPAN}-0"})
            assert unsampled.status_code == 200
            # Once the sampled request's span arrived, the worker exported whatever it
            # recorded of the first one (same batch or earlier).
            sampled = httpx.post(stack.url + "/v1/chat/completions", json=body, timeout=30,
                                 headers={"b3": f"{TRACE_ID}-{CALLER_SPAN}-1"})
            request_id = sampled.headers["x-server-request-id"]
            spans = receiver.wait_until(lambda spans: "worker" in _server_spans(spans, request_id))
            end = stack.frontend.wait_for_event(request_id, "request.end")
    worker = _server_spans(spans, request_id)["worker"]
    assert (worker.trace_id, worker.parent_span_id) == (TRACE_ID, end["span_id"])
    assert [s for s in spans if s.trace_id == unsampled_trace] == []


def test_a_b3_caller_sending_b3s_multiple_headers_is_continued(tmp_path: Path) -> None:
    # Envoy / Istio and Zipkin's libraries send B3 as X-B3-TraceId, X-B3-SpanId and
    # X-B3-Sampled (or X-B3-Flags: 1, debug), which OpenTelemetry's b3 propagator reads
    # as well as the single header. The middleware collected only the headers the
    # propagator writes (`b3`): behind such a proxy every request began a new trace, and
    # a debug-flagged one was not sampled.
    with otlp_receiver() as receiver:
        env = {**B3_ENV, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
        with start_stack(tmp_path, workers=[[]], env=env) as stack:
            response = httpx.post(
                stack.url + "/v1/chat/completions",
                json={"model": "echo", "messages": [{"role": "user", "content": "envoy"}]},
                headers={"X-B3-TraceId": TRACE_ID, "X-B3-SpanId": CALLER_SPAN,
                         "X-B3-Flags": "1"},
                timeout=30,
            )
            assert response.status_code == 200
            request_id = response.headers["x-server-request-id"]
            end = stack.frontend.wait_for_event(request_id, "request.end")
            spans = receiver.wait_until(lambda spans: len(_server_spans(spans, request_id)) == 2, timeout=10)
    assert (end["trace_id"], end["parent_span_id"]) == (TRACE_ID, CALLER_SPAN)
    found = _server_spans(spans, request_id)
    assert found["frontend"].trace_id == found["worker"].trace_id == TRACE_ID
    assert found["frontend"].parent_span_id == CALLER_SPAN


def test_a_frontend_propagating_nothing_still_names_itself_to_its_workers(
    tmp_path: Path,
) -> None:
    # OTEL_PROPAGATORS=none at the edge (callers' trace context not trusted): the
    # recording frontend's propagators wrote nothing on the hop, so the worker's span
    # and lines started a trace of their own, with no parent to link them to the
    # request they served.
    with otlp_receiver() as receiver:
        exporting = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50"}
        with start_stack(tmp_path, workers=[[]], env={**exporting, "OTEL_PROPAGATORS": "none"},
                         worker_env=exporting) as stack:
            response = httpx.post(
                stack.url + "/v1/chat/completions",
                json={"model": "echo", "messages": [{"role": "user", "content": "edge"}]},
                headers={"traceparent": f"00-{TRACE_ID}-{CALLER_SPAN}-01"}, timeout=30,
            )
            assert response.status_code == 200, response.text
            request_id = response.headers["x-server-request-id"]
            spans = receiver.wait_until(lambda spans: len(_server_spans(spans, request_id)) == 2)
            worker_end = stack.workers[0].wait_for_event(request_id, "worker.end")
    found = _server_spans(spans, request_id)
    frontend, worker = found["frontend"], found["worker"]
    assert frontend.trace_id != TRACE_ID and frontend.parent_span_id == ""  # none: not read
    assert (worker.trace_id, worker.parent_span_id) == (frontend.trace_id, frontend.span_id)
    assert worker_end["parent_span_id"] == frontend.span_id


@pytest.fixture(scope="module")
def untrusting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """OTEL_PROPAGATORS=none on every process, no collector: shared by the two tests
    of that setting below (each reads only its own request's lines)."""
    env = {"OTEL_PROPAGATORS": "none", "OTEL_BSP_SCHEDULE_DELAY": "50"}
    with start_stack(tmp_path_factory.mktemp("untrusting"), workers=[[]], env=env) as stack:
        yield stack


def test_propagators_none_reads_no_callers_trace_without_a_collector(untrusting: Stack) -> None:
    # OTEL_PROPAGATORS=none is how a service says it does not trust its callers' trace
    # context. With a collector the span ignored the caller's traceparent, but with none
    # (nothing recording) it was parsed anyway: every frontend line named the caller's
    # trace and span. The ids ridtrace owns (x-request-id, the minted request_id) flow.
    stack = untrusting
    response = httpx.post(
        stack.url + "/v1/chat/completions",
        json={"model": "echo", "messages": [{"role": "user", "content": "untrusted"}]},
        headers={"traceparent": f"00-{TRACE_ID}-{CALLER_SPAN}-01", "x-request-id": "c-1"},
        timeout=30,
    )
    assert response.status_code == 200
    assert response.headers["x-request-id"] == "c-1"
    request_id = response.headers["x-server-request-id"]
    stack.frontend.wait_for_event(request_id, "request.end")
    worker_end = stack.workers[0].wait_for_event(request_id, "worker.end")
    frontend_lines = _lines(stack.frontend, request_id)
    assert frontend_lines and all(line["trace_id"] != TRACE_ID for line in frontend_lines)
    assert all("parent_span_id" not in line for line in frontend_lines)
    assert all(line["x_request_id"] == "c-1" for line in frontend_lines)
    assert worker_end["x_request_id"] == "c-1" and worker_end["trace_id"] != TRACE_ID


@pytest.mark.parametrize("collector", [True, False], ids=["collector", "no-collector"])
def test_a_worker_propagating_nothing_still_names_the_request_it_serves(
    tmp_path: Path, collector: bool, request: pytest.FixtureRequest
) -> None:
    # OTEL_PROPAGATORS=none on every process: the worker ignored the traceparent its own
    # frontend's hop always sends, so its span and lines began a trace of their own, and
    # `ridtrace analyze` counted the frontend request and the worker's work for it as two
    # holders of one request_id: a false duplicate_in_flight on every request.
    with contextlib.ExitStack() as running:
        env = {"OTEL_PROPAGATORS": "none", "OTEL_BSP_SCHEDULE_DELAY": "50"}
        if collector:
            receiver = running.enter_context(otlp_receiver())
            env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
            stack = running.enter_context(start_stack(tmp_path, workers=[[]], env=env))
        else:  # the same settings as the module's stack
            stack = request.getfixturevalue("untrusting")
        response = httpx.post(
            stack.url + "/v1/chat/completions",
            json={"model": "echo", "messages": [{"role": "user", "content": "inside"}]},
            headers={"traceparent": f"00-{TRACE_ID}-{CALLER_SPAN}-01"}, timeout=30,
        )
        request_id = response.headers["x-server-request-id"]
        end = stack.frontend.wait_for_event(request_id, "request.end")
        worker_end = stack.workers[0].wait_for_event(request_id, "worker.end")
        if collector:
            spans = receiver.wait_until(lambda spans: len(_server_spans(spans, request_id)) == 2)
            found = _server_spans(spans, request_id)
            assert found["frontend"].trace_id != TRACE_ID  # the caller's: not read
            assert (found["worker"].trace_id, found["worker"].parent_span_id) == (
                found["frontend"].trace_id, found["frontend"].span_id)
    assert end["trace_id"] != TRACE_ID
    assert (worker_end["trace_id"], worker_end["parent_span_id"]) == (end["trace_id"], end["span_id"])
    # In-process (click's runner): the report and exit code are the command's, without
    # ~2 CPU-s of pandas and DuckDB imports in a process of its own.
    report = CliRunner().invoke(main, ["analyze", str(stack.frontend.log),
                                       str(stack.workers[0].log), "--format", "json"])
    assert report.exit_code == 0, report.output[-2000:]
    assert orjson.loads(report.stdout)["summary"]["duplicate_in_flight"] == 0


@pytest.mark.parametrize(("path", "body"), [
    ("/generate", {"text": "ids", "rid": "span-body-rid"}),
    ("/inference/v1/generate", {"prompt": "ids", "request_id": "span-body-request-id"}),
])
def test_a_body_id_filling_in_the_header_is_the_frontend_spans_x_request_id(
    exporting: tuple[Stack, OtlpReceiver], path: str, body: dict[str, str]
) -> None:
    # Jaeger is searched by x_request_id: the frontend span carried a body id that
    # stood in for the header as `_x_request_id`, an app's name for it, so the search
    # found the worker's span and missed the frontend's.
    stack, receiver = exporting
    body_id = body.get("rid", body.get("request_id"))
    response = httpx.post(stack.url + path, json=body, timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["x-request-id"] == body_id
    request_id = response.headers["x-server-request-id"]
    spans = receiver.wait_until(lambda spans: len(_server_spans(spans, request_id)) == 2)
    for side, span in _server_spans(spans, request_id).items():
        assert span.attributes.get("x_request_id") == body_id, (side, span.attributes)
        assert "_x_request_id" not in span.attributes, (side, span.attributes)


def test_the_legacy_policys_client_key_is_the_frontend_spans_request_id(
    tmp_path: Path,
) -> None:
    # The legacy policy makes the client's id the request's: request.end and the
    # worker's span said so, the frontend span kept the minted id and filed the key
    # under `_request_id`.
    with otlp_receiver() as receiver, start_stack(
        tmp_path, workers=[[]], frontend=["--id-policy", "legacy"],
        env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50"},
    ) as stack:
        response = httpx.post(
            stack.url + "/v1/chat/completions", headers={"x-request-id": "legacy-key-1"},
            json={"model": "echo", "messages": [{"role": "user", "content": "key"}]},
            timeout=30)
        assert response.status_code == 200, response.text
        end = stack.frontend.wait_for_event("legacy-key-1", "request.end")
        assert end["x_request_id"] == "legacy-key-1"
        spans = receiver.wait_until(
            lambda spans: len(_server_spans(spans, "legacy-key-1")) == 2)
    for side, span in _server_spans(spans, "legacy-key-1").items():
        assert "_request_id" not in span.attributes, (side, span.attributes)
