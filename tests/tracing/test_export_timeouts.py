"""OTEL_BSP_EXPORT_TIMEOUT and OTEL_METRIC_EXPORT_TIMEOUT bound an OTLP export, as the
specification has them, against a collector that accepts and never answers.

The SDK's batch span processor keeps its export timeout unused and the OTLP metric
exporters ignore the one their reader passes: each export waited the exporter's own
10 s whatever they said, and so did every stop on a hung collector.
"""

from __future__ import annotations

import time

import pytest

from tests.support.otlp_receiver import export_one_of_each, unresponsive_collector

pytestmark = pytest.mark.usefixtures("telemetry_shut_down")


@pytest.mark.parametrize("variable", ["OTEL_BSP_EXPORT_TIMEOUT", "OTEL_METRIC_EXPORT_TIMEOUT"])
def test_the_export_timeout_variable_bounds_each_export(variable: str) -> None:
    with unresponsive_collector() as endpoint:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_TIMEOUT": "8",
               "OTEL_BSP_EXPORT_TIMEOUT": "8000", "OTEL_METRIC_EXPORT_TIMEOUT": "8000",
               variable: "300"}
        # The other signal's export is off: only the variable under test bounds the stop.
        other = "METRICS" if variable.startswith("OTEL_BSP") else "TRACES"
        env[f"OTEL_{other}_EXPORTER"] = "none"
        started = time.monotonic()
        export_one_of_each("bounded", env)  # its shutdown flushes into the hung collector
        took = time.monotonic() - started
    assert took < 4, f"{variable}=300 ms, yet the stop took {took:.1f} s"
