"""A collector's partial success (OTLP's ``partial_success``: some spans or data points
rejected, or a warning about the export) as ridtrace's log shows it, from a real
OTLP/HTTP and OTLP/gRPC receiver.

Neither exporter library reads it (the HTTP one never reads the answer's body, the
gRPC one drops the answer): spans a collector rejected (too large, too old, over a
tenant's quota) were lost without a word, the export counted as a full success.
"""

from __future__ import annotations

import logging

import pytest

from tests.support.otlp_receiver import export_one_of_each, otlp_grpc_receiver, otlp_receiver

pytestmark = pytest.mark.usefixtures("telemetry_shut_down")


def _warnings(
    caplog: pytest.LogCaptureFixture, rejecting: tuple[int, str], protocol: str = "http/protobuf"
) -> list[str]:
    receiving = otlp_grpc_receiver if protocol == "grpc" else otlp_receiver
    with receiving(rejecting=rejecting) as receiver, caplog.at_level(logging.WARNING):
        export_one_of_each("partial", {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
                                       "OTEL_EXPORTER_OTLP_PROTOCOL": protocol})
        receiver.wait_for(1, timeout=10)
        receiver.wait_for_metric_exports(1, timeout=10)
    return sorted(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


@pytest.mark.parametrize("protocol", ["http/protobuf", pytest.param("grpc", marks=pytest.mark.extra("grpc"))])
def test_items_a_collector_rejected_are_said_with_its_reason(
    caplog: pytest.LogCaptureFixture, protocol: str,
) -> None:
    said = _warnings(caplog, (3, "span too large"), protocol)
    assert len(said) == 2, said
    assert "rejected 3 data points of an export: span too large" in said[0]
    assert "rejected 3 spans of an export: span too large" in said[1]


def test_a_collectors_warning_about_an_accepted_export_is_said(
    caplog: pytest.LogCaptureFixture,
) -> None:
    said = _warnings(caplog, (0, "attribute names truncated"))
    assert len(said) == 2, said
    assert all("accepted an export and says: attribute names truncated" in s for s in said)
