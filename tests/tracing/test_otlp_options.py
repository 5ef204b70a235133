"""The OTLP exporters' options: OTEL_EXPORTER_OTLP_[SIGNAL_]HEADERS as a real receiver
gets them, and the headers and compressions no exporter can send refused by name when
telemetry is configured.

Left to the exporters, such an entry was dropped with a WARN (an ``authorization``
the collector then missed on every export) or failed every export of the process
("Invalid metadata", "Invalid ... character(s) in header value"), every span and metric
lost while the service ran on.
"""

from __future__ import annotations

from typing import Any

import pytest

from ridtrace.tracing import configure_metrics, configure_tracing, shutdown_telemetry
from tests.support.otlp_receiver import otlp_grpc_receiver, otlp_receiver

pytestmark = pytest.mark.usefixtures("telemetry_shut_down")


@pytest.mark.parametrize("protocol", ["http/protobuf", pytest.param("grpc", marks=pytest.mark.extra("grpc"))])
@pytest.mark.parametrize(("headers", "why"), [
    ("authorization=Bearer%0Aabc", r"the value of 'authorization' holds '\\n'"),
    ("x-tenant=a%00b", r"the value of 'x-tenant' holds '\\x00'"),
    ("x-tenant=%E2%82%AC", "the value of 'x-tenant' holds '€'"),
    ("x-tenant=ok,x-api-key abc", r"entry 2, \"\(no '='\)\", is no name=value header"),
    ("x-api-key=abc;def", "entry 1, 'x-api-key', is no name=value header"),
    ("a%0Ab=1", r"'a\\nb' is no OTLP/\w+ header name"),
])
def test_a_header_no_exporter_can_send_is_refused_by_name(
    protocol: str, headers: str, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    for variable in ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"):
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
               "OTEL_EXPORTER_OTLP_PROTOCOL": protocol, variable: headers}
        caplog.clear()
        with pytest.raises(ValueError, match=f"{variable}: {why}") as refused:
            configure_tracing("x", environ=env, set_global=False)
        assert "abc" not in str(refused.value)  # a credential stays out of the message
        # ... and out of the log: OpenTelemetry's parser warned with the whole entry,
        # which the service's logging wrote to its JSON log.
        assert not [r for r in caplog.records if "abc" in r.getMessage()], caplog.text
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
           "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
           "OTEL_EXPORTER_OTLP_METRICS_HEADERS": headers}
    with pytest.raises(ValueError, match=f"OTEL_EXPORTER_OTLP_METRICS_HEADERS: {why}"):
        configure_metrics("x", environ=env, set_global=False, prometheus=False)


@pytest.mark.extra("grpc")
def test_grpc_refuses_what_only_http_can_carry() -> None:
    # Latin-1 text and any token are fine in an HTTP header, not in gRPC metadata; nor
    # is a binary key, whose value the exporter would hand gRPC as text.
    for headers, why in (("x-city=M%C3%BCnchen", "holds 'ü'"), ("x!y=1", "'x!y' is no"),
                         ("x-token-bin=abc", "'x-token-bin' is no OTLP/gRPC header name")):
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
               "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_HEADERS": headers}
        with pytest.raises(ValueError, match=why):
            configure_tracing("x", environ=env, set_global=False)


def _headers_of_one_export(receiver: Any, env: dict[str, str]) -> dict[str, str]:
    """The headers one span's export brought `receiver`, exported with `env`."""
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, **env}
    provider = configure_tracing("h", environ=env, set_global=False)
    provider.get_tracer("t").start_span("s").end()
    shutdown_telemetry()
    receiver.wait_for(1, timeout=10)
    return dict(receiver.headers[0])


HEADERS = "Authorization=Bearer%20a%3Db , x-tenant=t%2C1,,x-empty="


def test_the_headers_reach_an_http_receiver_decoded() -> None:
    with otlp_receiver() as receiver:
        sent = _headers_of_one_export(receiver, {
            "OTEL_EXPORTER_OTLP_HEADERS": HEADERS + ",x-city=M%C3%BCnchen"})
    assert (sent["authorization"], sent["x-tenant"], sent["x-empty"]) == ("Bearer a=b", "t,1", "")
    assert sent["x-city"] == "München"  # Latin-1 octets, which HTTP allows


def test_an_entry_typed_with_a_literal_space_is_decoded_as_well() -> None:
    # Outside strict percent-encoding (the space), OpenTelemetry's parser took the entry
    # as typed, and its %3D stayed in the value, where the Go and Java SDKs decode it:
    # the collector refused every export (401) for a token it would have taken.
    with otlp_receiver() as receiver:
        sent = _headers_of_one_export(receiver, {
            "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Basic dXNlcg%3D%3D,x-b=a b%2Cc"})
    assert (sent["authorization"], sent["x-b"]) == ("Basic dXNlcg==", "a b,c")


@pytest.mark.extra("grpc")
def test_the_headers_reach_a_grpc_receiver_decoded() -> None:
    with otlp_grpc_receiver() as receiver:
        sent = _headers_of_one_export(receiver, {
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_HEADERS": HEADERS})
    assert (sent["authorization"], sent["x-tenant"], sent["x-empty"]) == ("Bearer a=b", "t,1", "")


@pytest.mark.extra("grpc")
@pytest.mark.parametrize("variable", ["OTEL_EXPORTER_OTLP_COMPRESSION",
                                      "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"])
def test_deflate_is_refused_over_grpc_and_kept_over_http(variable: str) -> None:
    # grpc-go (the OpenTelemetry Collector's and Jaeger's OTLP/gRPC server) has no
    # deflate: every export was answered UNIMPLEMENTED, "Decompressor is not installed
    # for grpc-encoding \"deflate\"", and lost.
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
           "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", variable: "Deflate"}
    with pytest.raises(ValueError, match=f"{variable}='Deflate': OTLP/gRPC compressions "
                                         "are gzip, none"):
        configure_tracing("x", environ=env, set_global=False)
    with otlp_receiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, variable: "deflate"}
        provider = configure_tracing("h", environ=env, set_global=False)
        provider.get_tracer("t").start_span("s").end()
        shutdown_telemetry()
        receiver.wait_for(1, timeout=10)
    assert receiver.headers[0]["content-encoding"] == "deflate"


def test_a_timeout_that_reads_as_milliseconds_is_warned_about_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The specification writes OTEL_EXPORTER_OTLP_TIMEOUT in milliseconds; the Python
    # exporters (and ridtrace) read seconds: 10000 waited ~2.8 h per export, silently.
    from ridtrace.tracing import otlp

    env = {"OTEL_EXPORTER_OTLP_TIMEOUT": "10000"}
    with caplog.at_level("WARNING", logger=otlp.__name__):
        assert otlp.otlp_timeout(env, "traces") == 10000.0
        assert otlp.otlp_timeout(env, "metrics") == 10000.0
        assert otlp.otlp_timeout({"OTEL_EXPORTER_OTLP_TIMEOUT": "30"}, "traces") == 30.0
    (said,) = [r.getMessage() for r in caplog.records]
    assert "OTEL_EXPORTER_OTLP_TIMEOUT=10000 is read in seconds" in said
    assert "set OTEL_EXPORTER_OTLP_TIMEOUT=10" in said
