"""configure_tracing / configure_metrics follow OpenTelemetry's environment conventions."""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    DEFAULT_ON,
    ParentBasedTraceIdRatio,
    TraceIdRatioBased,
)

from ridtrace.tracing import (
    configure_metrics,
    configure_tracing,
    lifecycle,
    metrics,
    shutdown_telemetry,
)
from tests.support.servers import child_pythonpath


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    # Before too: these tests count the providers shut down, and a test of another file
    # run earlier in the same worker process may have left one owned.
    shutdown_telemetry()
    yield
    shutdown_telemetry()
    metrics.bind_meter_provider(None)


def _service(env: dict[str, str], default: str | None = "ridtrace-default") -> object:
    provider = configure_tracing(default, environ=env, set_global=False)
    return provider.resource.attributes["service.name"]


def test_the_environment_names_the_service_over_the_code() -> None:
    assert _service({}) == "ridtrace-default"
    assert _service({}, None) == "ridtrace"
    assert _service({"OTEL_SERVICE_NAME": "from-env"}) == "from-env"
    assert _service({"OTEL_RESOURCE_ATTRIBUTES": "service.name=attr,team=infer"}) == "attr"
    both = {"OTEL_RESOURCE_ATTRIBUTES": "service.name=attr", "OTEL_SERVICE_NAME": "env"}
    assert _service(both) == "env"  # the specification: OTEL_SERVICE_NAME wins


def test_an_empty_service_name_in_the_environment_leaves_the_default() -> None:
    # `service.name=${SERVICE}` with SERVICE unset named every process
    # "unknown_service:python", frontend and workers alike; a blank OTEL_SERVICE_NAME
    # named them " ".
    assert _service({"OTEL_RESOURCE_ATTRIBUTES": "service.name=,team=infer"}) == "ridtrace-default"
    assert _service({"OTEL_RESOURCE_ATTRIBUTES": "service.name=%20"}) == "ridtrace-default"
    assert _service({"OTEL_SERVICE_NAME": "  "}) == "ridtrace-default"
    assert _service({"OTEL_SERVICE_NAME": " gw ", "OTEL_RESOURCE_ATTRIBUTES": "service.name="}) == "gw"


def test_resource_attributes_are_kept_and_decoded() -> None:
    provider = configure_tracing(
        "svc", environ={"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod%20eu, k8s.pod.name=p-1"},
        set_global=False,
    )
    attributes = provider.resource.attributes
    assert attributes["deployment.environment"] == "prod eu"
    assert attributes["k8s.pod.name"] == "p-1" and attributes["service.name"] == "svc"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, DEFAULT_ON),
        ({"OTEL_TRACES_SAMPLER": "always_off"}, ALWAYS_OFF),
        ({"OTEL_TRACES_SAMPLER": "nonsense"}, DEFAULT_ON),
    ],
)
def test_fixed_samplers(env: dict[str, str], expected: object) -> None:
    assert configure_tracing("s", environ=env, set_global=False).sampler is expected


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"OTEL_TRACES_SAMPLER": "alwyas_off"}, "OTEL_TRACES_SAMPLER='alwyas_off'"),
        ({"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "25"},
         "OTEL_TRACES_SAMPLER_ARG='25'"),
        ({"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "ten percent"},
         "OTEL_TRACES_SAMPLER_ARG='ten percent'"),
    ],
)
def test_a_sampler_setting_it_cannot_use_is_warned_about(
    env: dict[str, str], named: str, caplog: pytest.LogCaptureFixture
) -> None:
    # The specification asks for a warning: a typo silently sampled every trace.
    with caplog.at_level("WARNING"):
        configure_tracing("s", environ=env, set_global=False)
    assert any(named in r.getMessage() for r in caplog.records), caplog.text


def test_a_negative_ratio_samples_nothing_and_a_valid_setting_warns_of_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("WARNING"):
        off = configure_tracing("s", environ={
            "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "-1",
        }, set_global=False).sampler
        assert isinstance(off, TraceIdRatioBased) and off.rate == 0.0
        caplog.clear()
        configure_tracing("s", environ={
            "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.5",
        }, set_global=False)
    assert not caplog.records


def test_an_empty_sampler_variable_is_unset_and_warns_of_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The specification reads an empty variable as an unset one (a chart's `value: ""`):
    # both were warned about as settings it could not use, on every start.
    with caplog.at_level("WARNING"):
        assert configure_tracing("s", environ={
            "OTEL_TRACES_SAMPLER": " ", "OTEL_TRACES_SAMPLER_ARG": "",
        }, set_global=False).sampler is DEFAULT_ON
        ratio = configure_tracing("s", environ={
            "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "",
        }, set_global=False).sampler
    assert isinstance(ratio, TraceIdRatioBased) and ratio.rate == 1.0
    assert not caplog.records, caplog.text


def test_a_sampler_an_installed_package_registers_is_used(tmp_path: Path) -> None:
    # OTEL_TRACES_SAMPLER may name a sampler a package registers under OpenTelemetry's
    # `opentelemetry_traces_sampler` entry points, as opentelemetry-instrument builds
    # them (its factory given OTEL_TRACES_SAMPLER_ARG). ridtrace knew only the six
    # built-in names: it warned and sampled every trace, the volume the sampler was
    # installed to cut.
    (tmp_path / "keep_errors_sampler.py").write_text(
        "from opentelemetry.sdk.trace.sampling import ParentBasedTraceIdRatio\n"
        "def factory(arg):\n"
        "    return ParentBasedTraceIdRatio(float(arg) / 100)\n"
    )
    dist = tmp_path / "keep_errors_sampler-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: keep-errors-sampler\n"
                                   "Version: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[opentelemetry_traces_sampler]\nkeep_errors = keep_errors_sampler:factory\n"
        "KeepErrors = keep_errors_sampler:factory\n")
    script = (
        "from ridtrace.tracing import configure_tracing\n"
        "p = configure_tracing('s', environ={'OTEL_TRACES_SAMPLER': 'keep_errors',"
        " 'OTEL_TRACES_SAMPLER_ARG': '5'}, set_global=False)\n"
        "print(p.sampler.get_description())\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), child_pythonpath()])}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=60, check=True)
    assert "TraceIdRatioBased{0.05}" in done.stdout, done.stdout + done.stderr
    # Looked up as OpenTelemetry's configuration does: as registered, case kept.
    cased = subprocess.run([sys.executable, "-c", script.replace("'keep_errors'", "'KeepErrors'")],
                           env=env, capture_output=True, text=True, timeout=60, check=True)
    assert "TraceIdRatioBased{0.05}" in cased.stdout, cased.stdout + cased.stderr
    assert "WARN" not in done.stderr.upper(), done.stderr


def test_ratio_samplers_take_the_argument() -> None:
    ratio = configure_tracing("s", environ={
        "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25",
    }, set_global=False).sampler
    assert isinstance(ratio, TraceIdRatioBased) and ratio.rate == 0.25
    parent = configure_tracing("s", environ={
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.5",
    }, set_global=False).sampler
    assert isinstance(parent, ParentBasedTraceIdRatio)
    assert "0.5" in parent.get_description()


def test_always_off_records_no_span() -> None:
    provider = configure_tracing("s", environ={"OTEL_TRACES_SAMPLER": "always_off"}, set_global=False)
    span = provider.get_tracer("t").start_span("x")
    assert not span.is_recording()


def test_sdk_disabled_turns_metrics_off_and_exports_no_spans() -> None:
    disabled = {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    assert configure_metrics("s", environ=disabled, set_global=False) is None
    assert metrics.instruments() is None
    provider = configure_tracing("s", environ=disabled, set_global=False)
    assert provider._active_span_processor._span_processors == ()
    assert shutdown_telemetry() == 0  # nothing of it is ridtrace's to flush


def test_shutdown_is_idempotent_and_unbinds_metrics() -> None:
    configure_tracing("s", environ={}, set_global=False)
    configure_metrics("s", environ={}, set_global=False, prometheus=False)
    assert metrics.instruments() is not None
    assert shutdown_telemetry() == 2
    assert metrics.instruments() is None
    assert shutdown_telemetry() == 0


def test_a_provider_whose_shutdown_fails_is_a_warning_not_a_failed_stop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A meter provider fails its shutdown when its OTLP reader took the SDK's whole
    # 30 s on a slow collector ("deadline already exceeded" for the Prometheus reader
    # after it): raised into the lifespan, uvicorn logged a traceback and "Application
    # shutdown failed". The other providers are still shut down.
    class Failing:
        def shutdown(self) -> None:
            raise Exception("MeterProvider.shutdown failed because the following metric "
                            "readers failed during shutdown:\nPrometheusMetricReader: "
                            "Exception(\"Didn't get to execute, deadline already exceeded\")")

    configure_tracing("s", environ={}, set_global=False)
    lifecycle.own(Failing())
    with caplog.at_level("WARNING", logger=lifecycle.__name__):
        assert shutdown_telemetry() == 2
    (warning,) = [r.getMessage() for r in caplog.records if "shutdown failed" in r.getMessage()]
    assert "deadline already exceeded" in warning and "\n" not in warning
    assert shutdown_telemetry() == 0


def _one_traced_request(provider: object) -> str:
    import asyncio

    import httpx

    from ridtrace import RequestTracingMiddleware

    async def ok(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    app = RequestTracingMiddleware(ok, tracer_provider=provider, log_lifecycle=False)

    async def go() -> str:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            response = await client.get("/", headers={"x-request-id": "otlp-grpc-1"})
            return response.headers["x-server-request-id"]

    return asyncio.run(go())


@pytest.mark.extra("grpc")
@pytest.mark.parametrize("variable", ["OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"])
def test_spans_and_metrics_go_over_grpc_when_the_protocol_says_so(variable: str) -> None:
    # The protocol variable was ignored: spans went as HTTP to the collector's gRPC
    # port (4317), which answers nothing an HTTP exporter sends, and all were lost.
    from tests.support.otlp_receiver import otlp_grpc_receiver

    with otlp_grpc_receiver() as receiver:
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            variable: "grpc",
            "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "grpc",
        }
        provider = configure_tracing("over-grpc", environ=env, set_global=False)
        meters = configure_metrics("over-grpc", environ=env, set_global=False, prometheus=False)
        request_id = _one_traced_request(provider)
        assert shutdown_telemetry() == 2  # flushes both over gRPC
        (span,) = receiver.wait_for(1, timeout=10)
        assert meters is not None and receiver.metric_exports >= 1
    assert span.service_name == "over-grpc"
    assert (span.attributes["request_id"], span.attributes["x_request_id"]) == (
        request_id, "otlp-grpc-1",
    )  # fmt: skip
    assert receiver.metric("ridtrace.requests", outcome="ok") == 1


# What the process environment says, for another collector: none of it may reach the
# exporters of a provider configured from a mapping of its own.
_PROCESS_OTLP = {
    "OTEL_EXPORTER_OTLP_HEADERS": "x-tenant=process,authorization=process-secret",
    "OTEL_EXPORTER_OTLP_COMPRESSION": "none",
    "OTEL_EXPORTER_OTLP_TIMEOUT": "not-a-number",
    "OTEL_BSP_SCHEDULE_DELAY": "600000",
    "OTEL_METRIC_EXPORT_INTERVAL": "600000",
}


def test_the_exporters_options_come_from_the_environ_mapping_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # configure_tracing(environ=...) read the endpoint and protocol from the mapping,
    # but the exporter read headers, timeout and compression (and the batch processor
    # its delay) from os.environ: the mapping's collector got the process's credentials.
    for key, value in _PROCESS_OTLP.items():
        monkeypatch.setenv(key, value)
    from tests.support.otlp_receiver import otlp_receiver

    with otlp_receiver() as receiver:
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_HEADERS": "x-tenant=mine,authorization=Bearer%20mine",
            "OTEL_EXPORTER_OTLP_METRICS_HEADERS": "x-tenant=metrics,authorization=m",
            "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "7",
            "OTEL_BSP_SCHEDULE_DELAY": "50",
            "OTEL_METRIC_EXPORT_INTERVAL": "100",
        }
        provider = configure_tracing("mapped", environ=env, set_global=False)
        meters = configure_metrics("mapped", environ=env, set_global=False, prometheus=False)
        assert meters is not None
        _one_traced_request(provider)
        # No flush: the mapping's 50 ms delay sends it (the process's would wait 10 min).
        receiver.wait_for(1, timeout=10)
        receiver.wait_for_metric_exports(1, timeout=10)
        shutdown_telemetry()
    traces = [h for h in receiver.headers if h.get("content-encoding") == "gzip"]
    assert traces and all(h["x-tenant"] == "mine" for h in traces)
    assert traces[0]["authorization"] == "Bearer mine"
    plain = [h for h in receiver.headers if h.get("content-encoding") != "gzip"]
    assert plain and all(h["x-tenant"] == "metrics" for h in plain)  # a signal's own wins
    assert all(h["authorization"] == "m" for h in plain)
    assert all("process" not in str(h) for h in receiver.headers)


@pytest.mark.parametrize(("process", "mapped", "counters"), [
    # ridtrace's counters are observable ones, which lowmemory keeps cumulative.
    ("cumulative", "delta", 1), ("delta", "", 2), ("delta", "LowMemory", 2),
])
def test_the_metrics_temporality_comes_from_the_environ_mapping_given(
    monkeypatch: pytest.MonkeyPatch, process: str, mapped: str, counters: int
) -> None:
    # The exporter read OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE from
    # os.environ: a mapping asking for delta sums exported cumulative ones (and one
    # saying nothing got the process's delta), which a delta backend sums again.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", process)
    from tests.support.otlp_receiver import otlp_receiver

    with otlp_receiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": receiver.endpoint + "/v1/metrics",
               "OTEL_METRIC_EXPORT_INTERVAL": "600000"}
        if mapped:
            env["OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE"] = mapped
        assert configure_metrics("t", environ=env, set_global=False, prometheus=False)
        metrics.request_finished("/x", "ok")
        metrics.inflight_changed("frontend", 1)
        shutdown_telemetry()
    assert receiver.temporality["ridtrace.requests"] == counters  # 1 delta, 2 cumulative
    assert receiver.temporality["ridtrace.inflight"] == 2  # an up-down counter: always


def test_an_unknown_temporality_preference_is_refused_by_name() -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
           "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": "deltas"}
    with pytest.raises(ValueError, match="OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE"):
        configure_metrics("x", environ=env, set_global=False, prometheus=False)


@pytest.mark.extra("grpc")
def test_the_grpc_exporter_sends_the_mappings_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in _PROCESS_OTLP.items():
        monkeypatch.setenv(key, value)
    from tests.support.otlp_receiver import otlp_grpc_receiver

    with otlp_grpc_receiver() as receiver:
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "OTEL_EXPORTER_OTLP_HEADERS": "x-tenant=grpc-mine",
            "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
        }
        provider = configure_tracing("mapped-grpc", environ=env, set_global=False)
        _one_traced_request(provider)
        shutdown_telemetry()
        receiver.wait_for(1, timeout=10)
    assert receiver.headers and all(h["x-tenant"] == "grpc-mine" for h in receiver.headers)
    assert all("authorization" not in h for h in receiver.headers)


@pytest.mark.parametrize(
    ("variable", "value"),
    [("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "soon"), ("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd")],
)
def test_a_bad_exporter_option_in_the_mapping_is_refused_by_name(
    variable: str, value: str
) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", variable: value}
    with pytest.raises(ValueError, match=f"{variable}='{value}'"):
        configure_tracing("x", environ=env, set_global=False)


@pytest.mark.parametrize(
    ("variable", "value"),
    [("OTEL_BSP_SCHEDULE_DELAY", "0"), ("OTEL_BSP_MAX_QUEUE_SIZE", "-5"),
     ("OTEL_METRIC_EXPORT_INTERVAL", "0"), ("OTEL_METRIC_EXPORT_INTERVAL", "-1")],
)
def test_a_batch_or_interval_setting_that_is_not_positive_is_refused_by_name(
    variable: str, value: str
) -> None:
    # A 0 was silently the default (OTEL_BSP_SCHEDULE_DELAY=0, meant as "at once", held
    # spans 5 s; an interval of 0 exported every 60 s), and a negative value stopped
    # `ridtrace serve` with the SDK's "interval value -1 is invalid", naming no variable.
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", variable: value}
    configure = configure_metrics if variable.startswith("OTEL_METRIC") else configure_tracing
    with pytest.raises(ValueError, match=f"{variable}='{value}'"):
        configure("x", environ=env, set_global=False)


def test_a_queue_smaller_than_the_default_batch_is_the_batch_size() -> None:
    # OTEL_BSP_MAX_QUEUE_SIZE=256 alone (a bound on the memory spans may hold) stopped
    # `ridtrace serve` with the SDK's "max_export_batch_size must be less than or equal
    # to max_queue_size.", a variable the operator never set, named by no variable; the
    # Go and Java SDKs export batches of the queue's size then.
    from tests.support.otlp_receiver import export_one_of_each, otlp_receiver

    with otlp_receiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
               "OTEL_BSP_MAX_QUEUE_SIZE": "256", "OTEL_BSP_SCHEDULE_DELAY": "600000",
               "OTEL_METRIC_EXPORT_INTERVAL": "600000"}
        export_one_of_each("small-queue", env)
        assert [s.service_name for s in receiver.spans] == ["small-queue"]


def test_a_batch_larger_than_the_queue_is_refused_naming_both_variables() -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
           "OTEL_BSP_MAX_QUEUE_SIZE": "100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "200"}
    with pytest.raises(ValueError, match=r"OTEL_BSP_MAX_EXPORT_BATCH_SIZE='200'.*"
                                         r"OTEL_BSP_MAX_QUEUE_SIZE='100'"):
        configure_tracing("x", environ=env, set_global=False)


@pytest.mark.parametrize("protocol", [pytest.param("grpc", marks=pytest.mark.extra("grpc")), "http/protobuf"])
@pytest.mark.parametrize(
    "variable",
    ["OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY",
     "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"],
)
def test_a_tls_file_that_is_not_there_is_refused_by_name(
    tmp_path: Path, protocol: str, variable: str
) -> None:
    # Over grpc the exporter's build raised FileNotFoundError (`ridtrace serve`: "internal
    # error (exit 4); please report it"); over https every export failed at run time
    # ("Could not find a suitable TLS CA certificate bundle"), spans dropped.
    missing = str(tmp_path / "missing.pem")
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://127.0.0.1:9",
           "OTEL_EXPORTER_OTLP_PROTOCOL": protocol, variable: missing}
    with pytest.raises(ValueError, match=f"{variable}='{missing}'"):
        configure_tracing("x", environ=env, set_global=False)
    if protocol == "http/protobuf":  # read only when it connects (grpc aborts on junk)
        present = tmp_path / "present.pem"
        present.write_bytes(b"-----BEGIN CERTIFICATE-----\n")
        configure_tracing("x", environ={**env, variable: str(present)}, set_global=False)


@pytest.mark.parametrize("protocol", [pytest.param("grpc", marks=pytest.mark.extra("grpc")), "http/protobuf"])
def test_tls_files_are_not_asked_for_over_plain_http(tmp_path: Path, protocol: str) -> None:
    # An http:// (or grpc insecure) exporter reads no TLS file: one named but absent
    # (a variable shared by several services) is no reason to refuse to start.
    configure_tracing("x", environ={
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
        "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
        "OTEL_EXPORTER_OTLP_CERTIFICATE": str(tmp_path / "missing.pem"),
    }, set_global=False)


def test_the_otlp_protocol_picks_the_endpoint_shape_and_refuses_unknown_values() -> None:
    from ridtrace.tracing.spans import otlp_endpoint

    base = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317/"}
    assert otlp_endpoint(base, "traces") == "http://collector:4317/v1/traces"
    assert otlp_endpoint({**base, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "traces") == (
        "http://collector:4317/v1/traces"
    )
    assert otlp_endpoint({**base, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "traces") == (
        "http://collector:4317/"
    )
    mixed = {**base, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
             "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/protobuf"}  # fmt: skip
    assert otlp_endpoint(mixed, "metrics") == "http://collector:4317/v1/metrics"
    with pytest.raises(ValueError, match="OTEL_EXPORTER_OTLP_PROTOCOL='thrift'"):
        configure_tracing("x", environ={**base, "OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"},
                          set_global=False)  # fmt: skip


@pytest.mark.parametrize(
    ("silenced", "spans_expected", "metrics_expected"),
    [("OTEL_TRACES_EXPORTER", 0, True), ("OTEL_METRICS_EXPORTER", 1, False)],
)
def test_an_exporter_variable_of_none_silences_its_signal_only(
    silenced: str, spans_expected: int, metrics_expected: bool
) -> None:
    # Both variables were ignored: with one OTEL_EXPORTER_OTLP_ENDPOINT shared by the
    # signals, OTEL_TRACES_EXPORTER=none still exported every span.
    from tests.support.otlp_receiver import otlp_receiver

    with otlp_receiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, silenced: "none"}
        provider = configure_tracing("picky", environ=env, set_global=False)
        configure_metrics("picky", environ=env, set_global=False, prometheus=False)
        _one_traced_request(provider)
        shutdown_telemetry()  # exports synchronously whatever is configured to go
        assert len(receiver.spans) == spans_expected
        assert (receiver.metric_exports > 0) is metrics_expected
        if metrics_expected:
            assert receiver.metric("ridtrace.requests", "picky", outcome="ok") == 1


def test_the_exporter_variables_follow_the_sdk() -> None:
    from ridtrace.tracing.spans import otlp_export_endpoint

    base = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}
    assert otlp_export_endpoint(base, "traces") == "http://collector:4318/v1/traces"
    assert otlp_export_endpoint({**base, "OTEL_TRACES_EXPORTER": "otlp,console"}, "traces") == (
        "http://collector:4318/v1/traces"
    )
    assert otlp_export_endpoint({**base, "OTEL_METRICS_EXPORTER": "prometheus"}, "metrics") is None
    # No endpoint: nothing is sent, unless OTLP is asked for by name (the SDK's default).
    assert otlp_export_endpoint({}, "traces") is None
    assert otlp_export_endpoint({"OTEL_TRACES_EXPORTER": "otlp"}, "traces") == (
        "http://localhost:4318/v1/traces"
    )
    assert otlp_export_endpoint(
        {"OTEL_METRICS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "metrics"
    ) == "http://localhost:4317"
    with pytest.raises(ValueError, match="OTEL_TRACES_EXPORTER='jaeger'"):
        configure_tracing("x", environ={**base, "OTEL_TRACES_EXPORTER": "jaeger"},
                          set_global=False)  # fmt: skip
    with pytest.raises(ValueError, match="OTEL_METRICS_EXPORTER='zipkin'"):
        configure_metrics("x", environ={"OTEL_METRICS_EXPORTER": "zipkin"}, set_global=False)


def test_providers_are_shut_down_side_by_side_not_one_after_the_other() -> None:
    # Each provider's flush may wait its exporter's whole timeout on a dead collector:
    # one after the other the waits added up past a pod's grace period. Here each
    # provider's shutdown waits for the other's to begin, which only happens when both
    # run at once (one at a time, the first would wait out the deadline alone).
    started = [threading.Event(), threading.Event()]
    overlapped: list[bool] = []

    class Provider:
        def __init__(self, me: int) -> None:
            self.me = me

        def shutdown(self) -> None:
            started[self.me].set()
            overlapped.append(started[1 - self.me].wait(timeout=10))

    for me in (0, 1):
        lifecycle.own(Provider(me))
    assert shutdown_telemetry() == 2
    assert overlapped == [True, True]


def test_a_mapping_given_names_every_resource_attribute(monkeypatch: pytest.MonkeyPatch) -> None:
    # docs/tracing.md: environ=mapping reads these from the mapping instead of os.environ;
    # the SDK's resource detector still added the process's OTEL_RESOURCE_ATTRIBUTES.
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod,team=infer")
    mapped = configure_tracing(
        "svc", environ={"OTEL_RESOURCE_ATTRIBUTES": "team=eval"}, set_global=False
    ).resource.attributes
    assert "deployment.environment" not in mapped
    assert mapped["team"] == "eval" and mapped["service.name"] == "svc"
    assert mapped["telemetry.sdk.name"] == "opentelemetry"  # the SDK's own are kept
    meters = configure_metrics("svc", environ={}, set_global=False, prometheus=False)
    assert meters is not None and "team" not in meters._sdk_config.resource.attributes
    # Without a mapping the process's environment is the one to follow.
    assert configure_tracing("svc", set_global=False).resource.attributes["team"] == "infer"


def test_shutdown_gives_up_on_a_flush_after_its_exporters_timeout() -> None:
    # A batch span processor flushes a backlog one batch at a time, each waiting the
    # exporter's whole timeout on a hung collector: the stop took a multiple of it.
    with _owned_hung_provider(flush_limit=0.2):
        started = time.monotonic()
        assert shutdown_telemetry() == 1
        assert time.monotonic() - started < 0.2 + lifecycle.FLUSH_MARGIN_SECONDS + 2


def test_a_timeout_of_hours_does_not_hold_shutdown_past_the_sdks_own_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # OTEL_EXPORTER_OTLP_TIMEOUT=10000 means 10 s in the specification (milliseconds)
    # and 10000 s to the Python exporters: the SDK's own 30 s bound still holds.
    monkeypatch.setattr(lifecycle, "SDK_SHUTDOWN_SECONDS", 0.2)
    with _owned_hung_provider(flush_limit=10000.0):
        started = time.monotonic()
        assert shutdown_telemetry() == 1
        assert time.monotonic() - started < 2


def test_a_flush_the_sdk_gives_up_on_quietly_is_said_in_a_warn(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    # The SDK's batch processor gives up at its own bound and returns, the spans unsent:
    # with an exporter timeout past that bound the shutdown thread was done by the
    # deadline, and a collector that never answered lost a stop's spans without a line.
    monkeypatch.setattr(lifecycle, "SDK_SHUTDOWN_SECONDS", lifecycle.FLUSH_MARGIN_SECONDS + 0.5)
    gave_up = threading.Event()

    class GivesUpAtTheSdksBound:
        def shutdown(self) -> None:
            gave_up.wait(timeout=lifecycle.SDK_SHUTDOWN_SECONDS)  # returns, nothing sent

    lifecycle.own(GivesUpAtTheSdksBound(), flush_limit=45.0)
    try:
        with caplog.at_level(logging.WARNING, logger=lifecycle.__name__):
            assert shutdown_telemetry() == 1
    finally:
        gave_up.set()
    assert any("telemetry not flushed within 0.5 s" in r.getMessage() for r in caplog.records)


@contextlib.contextmanager
def _owned_hung_provider(*, flush_limit: float) -> Iterator[None]:
    """A provider whose shutdown hangs (a collector that never answers), owned for the
    next stop; released afterwards so its thread ends."""
    release = threading.Event()

    class HungProvider:
        def shutdown(self) -> None:
            release.wait(timeout=30)

    lifecycle.own(HungProvider(), flush_limit=flush_limit)
    try:
        yield
    finally:
        release.set()


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "127.0.0.1:4318"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "/v1/traces"),
    ],
)
def test_an_http_endpoint_that_is_no_url_is_refused_by_name(variable: str, value: str) -> None:
    # The HTTP exporter took it and failed every batch while the service ran on.
    with pytest.raises(ValueError, match=f"{variable}='{value}'"):
        configure_tracing("x", environ={variable: value}, set_global=False)
    # A gRPC exporter takes host:port as it is.
    from ridtrace.tracing.spans import otlp_export_endpoint

    grpc_env = {variable: value, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    assert otlp_export_endpoint(grpc_env, "traces") == value


@pytest.mark.parametrize("variable", ["OTEL_EXPORTER_OTLP_ENDPOINT",
                                      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"])
def test_a_grpc_endpoint_with_a_password_is_refused_without_showing_it(variable: str) -> None:
    # gRPC sends no userinfo: the exporter failed every export and wrote the password
    # into each ERROR line ("errors resolving otluser:pAssw0rd@127.0.0.1:4317").
    for value in ("http://otluser:pAssw0rd@127.0.0.1:4317", "otluser:pAssw0rd@collector:4317"):
        env = {variable: value, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
        with pytest.raises(ValueError, match="takes no user:password") as refused:
            configure_tracing("x", environ=env, set_global=False)
        assert variable in str(refused.value) and "pAssw0rd" not in str(refused.value)


def test_blanks_around_an_endpoint_are_no_part_of_it() -> None:
    # Kept, they failed every export: "Host '127.0.0.1:4318 ' contains invalid character".
    from ridtrace.tracing.spans import otlp_export_endpoint

    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": " http://collector:4318 "}
    assert otlp_export_endpoint(env, "traces") == "http://collector:4318/v1/traces"
    env = {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://collector:4318/v1/metrics\n"}
    assert otlp_export_endpoint(env, "metrics") == "http://collector:4318/v1/metrics"


_SCRIPT_EXITING_WITHOUT_SHUTDOWN = """
from ridtrace.tracing import configure_metrics, configure_tracing
provider = configure_tracing("batch-job")
configure_metrics("batch-job", prometheus=False)
tracer = provider.get_tracer("job")
for i in range(12):
    tracer.start_span(f"step-{i}").end()
import time
print(time.monotonic(), flush=True)  # the script's work is done: its exit starts here
"""


def test_a_process_that_never_calls_shutdown_is_flushed_at_exit_within_the_bound(
    tmp_path: Path,
) -> None:
    # A script (a batch job, a CLI) leaves the flush to interpreter exit. The SDK's own
    # exit hooks shut the tracer and then the meter provider down, every queued batch
    # waiting the exporter's whole timeout on a hung collector: 12 batches of one span
    # and a one-second timeout held the exit ~13 s, and the meter provider logged
    # "shutdown can only be called once" after a lifespan's bounded shutdown.
    import os
    import subprocess
    import sys

    from tests.support.otlp_receiver import unresponsive_collector
    from tests.support.servers import child_pythonpath

    with unresponsive_collector() as endpoint:
        env = {**os.environ, "PYTHONPATH": child_pythonpath(),
               "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
               "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "1", "OTEL_BSP_SCHEDULE_DELAY": "120000",
               "OTEL_METRIC_EXPORT_INTERVAL": "120000"}
        done = subprocess.run([sys.executable, "-c", _SCRIPT_EXITING_WITHOUT_SHUTDOWN],
                              env=env, capture_output=True, text=True, timeout=120)
        exited = time.monotonic()
    assert done.returncode == 0, done.stderr
    # One export timeout and a margin, counted from the end of the script's work (the
    # monotonic clock is the machine's, shared by both processes): counted from the
    # start, the interpreter's start-up and imports, 3 s and more on a loaded machine,
    # failed the bound with an exit that kept it.
    took = exited - float(done.stdout.split()[-1])
    assert took < 6, f"the exit took {took:.1f} s"
    assert "shutdown can only be called once" not in done.stderr


_SCRIPT_RUN_TWICE = """
from ridtrace.tracing import configure_tracing
first = configure_tracing("my-api", environ={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
again = configure_tracing("my-api", environ={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
print(again is first, flush=True)
"""


def test_a_second_call_returns_the_first_calls_provider() -> None:
    # `python app.py` whose module ends in uvicorn.run("app:app") runs the module twice
    # (as __main__, then as app): the second configure_tracing built a second provider,
    # never global (the global one cannot be replaced), with its own exporter and batch
    # thread, and OpenTelemetry logged "Overriding of current TracerProvider is not
    # allowed" as a WARN at every start. configure_metrics already returned the first.
    env = {**os.environ, "PYTHONPATH": child_pythonpath()}
    done = subprocess.run([sys.executable, "-c", _SCRIPT_RUN_TWICE], env=env,
                          capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["True"], done.stdout + done.stderr
    assert "Overriding" not in done.stderr, done.stderr


def test_span_limits_come_from_the_environ_mapping_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The SDK's SpanLimits() read OTEL_SPAN_* / OTEL_ATTRIBUTE_* from os.environ alone:
    # a mapping's limits were ignored and the process's applied, where the mapping was
    # meant to replace the process environment.
    monkeypatch.setenv("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "1")
    monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "3")
    mapped = configure_tracing("m", environ={"OTEL_SPAN_EVENT_COUNT_LIMIT": "2",
                                             "OTEL_ATTRIBUTE_COUNT_LIMIT": "5"},
                               set_global=False)
    with mapped.get_tracer("t").start_as_current_span("s") as span:
        for name in "abcdefg":
            span.set_attribute(name, "long value")
    limits = mapped._span_limits
    assert (limits.max_events, limits.max_span_attributes) == (2, 5)
    assert limits.max_span_attribute_length is None  # not the process's 3
    assert span.attributes is not None and len(span.attributes) == 5
    assert span.attributes["g"] == "long value"  # not cut to the process's 3 characters
    with pytest.raises(ValueError, match="OTEL_SPAN_LINK_COUNT_LIMIT"):
        configure_tracing("m", environ={"OTEL_SPAN_LINK_COUNT_LIMIT": "many"}, set_global=False)
    # Without a mapping the process environment's limits stand, as the SDK reads them.
    assert configure_tracing("p", set_global=False)._span_limits.max_span_attributes == 1
