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
