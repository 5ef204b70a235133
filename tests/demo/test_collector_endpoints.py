"""What `ridtrace demo` says about the collector its OTEL_* variables name (docs/jaeger.md)."""

from __future__ import annotations

import pytest

from ridtrace.cli.demo import _traces_endpoint
from tests.support.otlp_receiver import otlp_receiver

_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
              "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
              "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
              "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_SDK_DISABLED")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in _VARIABLES:  # also restores what _traces_endpoint sets
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_a_traces_endpoint_without_its_path_is_named_not_called_traceless(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The signal's own variable is used as it is, so Jaeger's base URL there sends every
    # export to "/" (404). The demo said "it takes no traces (as Jaeger)" and advised
    # OTEL_TRACES_EXPORTER=none, where the URL only lacked its /v1/traces.
    with otlp_receiver(metrics=False) as receiver:
        clean_env.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.endpoint)
        clean_env.setenv("OTEL_METRICS_EXPORTER", "none")
        _traces_endpoint()
    said = capsys.readouterr().err
    assert said.count("\n") == 1, said
    assert f"set it to {receiver.endpoint}/v1/traces" in said, said
    assert "takes no traces" not in said and "EXPORTER=none" not in said, said


def test_a_collector_without_a_metrics_pipeline_is_still_said_to_take_none(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with otlp_receiver(metrics=False) as receiver:
        clean_env.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", receiver.endpoint + "/v1/metrics")
        clean_env.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.endpoint + "/v1/traces")
        assert _traces_endpoint() == receiver.endpoint + "/v1/traces"
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and "it takes no metrics (as Jaeger)" in said, said
