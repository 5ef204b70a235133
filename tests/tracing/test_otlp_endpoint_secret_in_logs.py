"""A collector key in the OTLP endpoint's query never reaches the JSON log.

The OTLP/HTTP exporter's own warnings quote the URL an export failed on (`Transient
error … Max retries exceeded with url: /v1/traces?api_key=…`), once per retry, and
through the standard-library bridge those lines went into the service's log, the file
shipped to log stores. ridtrace's own messages already showed such a URL as `?…`.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from loguru import logger
from opentelemetry.sdk.trace import TracerProvider

from ridtrace import configure_logging
from ridtrace.tracing.otlp import otlp_exporter
from tests.support.servers import free_port

pytestmark = pytest.mark.usefixtures("telemetry_shut_down")


def test_an_export_failure_line_shows_the_endpoint_without_its_key(tmp_path: Path) -> None:
    log = tmp_path / "app.jsonl"
    handler = configure_logging(log, service="svc")
    try:
        span = TracerProvider().get_tracer("t").start_span("s")
        span.end()
        # Nothing listens there: the export fails, and the exporter says where.
        endpoint = f"http://127.0.0.1:{free_port()}/otlp/v1/traces?api_key=S3CRETKEY"
        exporter = otlp_exporter({"OTEL_EXPORTER_OTLP_TIMEOUT": "2"}, "traces", endpoint)
        exporter.export([span])  # type: ignore[list-item]
        exporter.shutdown()
    finally:
        logger.remove(handler)
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)
    text = log.read_text()
    assert "/otlp/v1/traces?…" in text, text  # the failure is said, where it was sent
    assert "S3CRETKEY" not in text
