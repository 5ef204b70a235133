"""Over OTLP/gRPC, a failed export of traces and one of metrics are both said."""

from __future__ import annotations

import logging

import pytest

from ridtrace.tracing.export_failures import GRPC_EXPORTER_LOGGER
from ridtrace.tracing.otlp import otlp_exporter_module

_FAILED = "Failed to export %s to %s, error code: %s, error details: %s"
_TRANSIENT = ("Transient error %s encountered while exporting %s to %s, retrying in %.2fs. "
              "Error details: %s")


@pytest.mark.extra("grpc")
def test_both_signals_failing_at_once_are_both_logged(caplog: pytest.LogCaptureFixture) -> None:
    # Both exports to a collector that is down, side by side at a stop: the SDK's
    # DuplicateFilter keyed on the message template alone dropped the second signal's
    # lines, so whichever signal lost the race was lost without a word.
    for signal in ("traces", "metrics"):
        otlp_exporter_module({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, signal)
    logger = logging.getLogger(GRPC_EXPORTER_LOGGER)
    with caplog.at_level(logging.WARNING, logger=GRPC_EXPORTER_LOGGER):
        for signal in ("traces", "metrics"):
            logger.warning(_TRANSIENT, "UNAVAILABLE", signal, "localhost:4317", 1.0, "down")
        for signal in ("traces", "metrics"):
            logger.error(_FAILED, signal, "localhost:4317", "UNAVAILABLE", "down")
        for signal in ("traces", "metrics"):  # the same again at once: still one each
            logger.error(_FAILED, signal, "localhost:4317", "UNAVAILABLE", "down")
    said = [r.getMessage().split(" to localhost")[0] for r in caplog.records]
    assert said == ["Transient error UNAVAILABLE encountered while exporting traces",
                    "Transient error UNAVAILABLE encountered while exporting metrics",
                    "Failed to export traces", "Failed to export metrics"]
