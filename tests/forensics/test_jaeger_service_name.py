"""`export jaeger` names every process: a Jaeger process needs a `serviceName`, and a
service logged as "" (`configure_logging(service="")`) was exported as one."""

from __future__ import annotations

from pathlib import Path

import pytest

from ridtrace.forensics.reading.events import load_events
from ridtrace.forensics.records.spans import build_requests
from ridtrace.forensics.views.jaeger import to_jaeger
from tests.forensics.helpers import rt_at_us


@pytest.mark.parametrize("service", ["", "  "])
def test_an_empty_service_is_named_by_its_side(tmp_path: Path, service: str) -> None:
    ids = {"request_id": "r1", "trace_id": "a" * 32, "span_id": "b" * 16}
    (tmp_path / "app.jsonl").write_text("\n".join([
        rt_at_us(0, "request.start", service, **ids),
        rt_at_us(5_000, "request.end", service, status=200, outcome="ok", **ids),
    ]) + "\n")
    events = load_events([str(tmp_path)]).events
    (trace,) = to_jaeger(build_requests(events), events)["data"]
    assert [p["serviceName"] for p in trace["processes"].values()] == ["frontend"]
