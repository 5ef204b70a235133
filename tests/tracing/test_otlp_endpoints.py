"""Where OTLP/HTTP exports go, as a real receiver sees their request targets."""

from __future__ import annotations

import pytest

from tests.support.otlp_receiver import export_one_of_each, otlp_receiver

pytestmark = pytest.mark.usefixtures("telemetry_shut_down")


@pytest.mark.parametrize(("suffix", "prefix"), [("?tenant=a%2Cb", ""), ("/otlp/?k=1&t=x", "/otlp")])
def test_the_signal_path_goes_onto_the_base_urls_path_and_its_query_stays(
    suffix: str, prefix: str
) -> None:
    # Appended to the whole string, a base endpoint with a query sent every export to
    # `/?tenant=a%2Cb/v1/traces`: the collector answered 404 and nothing arrived.
    with otlp_receiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint + suffix,
               "OTEL_BSP_SCHEDULE_DELAY": "600000", "OTEL_METRIC_EXPORT_INTERVAL": "600000"}
        export_one_of_each("q", env)
        query = suffix.partition("?")[2]
        assert sorted(receiver.paths) == [f"{prefix}/v1/metrics?{query}",
                                          f"{prefix}/v1/traces?{query}"]
        if not prefix:  # the receiver serves /v1/... only, as a collector does
            assert len(receiver.spans) == 1
            assert receiver.metric("ridtrace.requests", "q", route="/x") == 1


@pytest.mark.parametrize(("variable", "value"), [("OTEL_TRACES_EXPORTER", "none,otlp"),
                                                 ("OTEL_METRICS_EXPORTER", "otlp, None")])
def test_none_beside_another_exporter_is_refused_not_taken_for_that_exporter(
    variable: str, value: str
) -> None:
    # Its `none` was dropped and `otlp` kept: every span went to the collector that the
    # `none` was meant to keep them from. The Python SDK fails on such a list, Java's too.
    from ridtrace.tracing import configure_metrics, configure_tracing

    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", variable: value}
    with pytest.raises(ValueError, match=f"{variable}='{value}': 'none' means no exporter"):
        if variable == "OTEL_TRACES_EXPORTER":
            configure_tracing("n", environ=env, set_global=False)
        else:
            configure_metrics("n", environ=env, set_global=False, prometheus=False)


def test_the_python_sdks_otlp_proto_http_exporter_name_sends_over_http() -> None:
    # opentelemetry-instrument's own name for OTLP over HTTP, and its protocol wins over
    # OTEL_EXPORTER_OTLP_PROTOCOL there: refused as unknown, it kept a service set up for
    # it from starting.
    with otlp_receiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
               "OTEL_TRACES_EXPORTER": "otlp_proto_http", "OTEL_METRICS_EXPORTER": "none",
               "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
        export_one_of_each("h", env)
        assert receiver.paths == ["/v1/traces"] and len(receiver.spans) == 1


@pytest.mark.extra("grpc")
def test_the_python_sdks_otlp_proto_grpc_exporter_name_sends_over_grpc() -> None:
    from tests.support.otlp_receiver import otlp_grpc_receiver

    with otlp_grpc_receiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
               "OTEL_TRACES_EXPORTER": "otlp_proto_grpc",
               "OTEL_METRICS_EXPORTER": "otlp_proto_grpc"}
        export_one_of_each("g", env)
        assert len(receiver.spans) == 1
        assert receiver.metric("ridtrace.requests", "g", route="/x") == 1


def test_otlp_over_both_protocols_at_once_is_refused() -> None:
    from ridtrace.tracing import configure_tracing

    value = "otlp_proto_http,otlp_proto_grpc"
    with pytest.raises(ValueError, match="name otlp_proto_http or otlp_proto_grpc, not both"):
        configure_tracing("n", environ={"OTEL_TRACES_EXPORTER": value}, set_global=False)
