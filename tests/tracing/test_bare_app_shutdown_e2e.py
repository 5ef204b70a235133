"""A bare ASGI app under a real uvicorn, stopped by SIGTERM: nothing batched is lost.

Such an app has no lifespan to put ``telemetry_lifespan`` in, and uvicorn re-raises the
signal after its graceful shutdown, so ``atexit`` never runs: the middleware answers the
lifespan protocol for it and flushes ridtrace's providers at its end. So it does at the
end of an app's own lifespan that does not nest ``telemetry_lifespan``.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.otlp_receiver import otlp_receiver
from tests.support.servers import free_port, run_server


@pytest.mark.parametrize("lifespan", ["raise", "return", "own"])
def test_sigterm_flushes_a_bare_asgi_app(tmp_path: Path, lifespan: str) -> None:
    with otlp_receiver() as receiver:
        port = free_port()
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "BARE_APP_LIFESPAN": lifespan,
            # Held back for longer than the test runs: what arrives was flushed at the stop.
            "OTEL_BSP_SCHEDULE_DELAY": "120000", "OTEL_METRIC_EXPORT_INTERVAL": "120000",
        }
        argv = ["-m", "uvicorn", "tests.tracing.bare_asgi_app:create_app", "--factory",
                "--host", "127.0.0.1", "--port", str(port)]
        with run_server(argv, port=port, workdir=tmp_path, env=env) as server:
            for i in range(3):
                response = httpx.get(f"{server.url}/hello", headers={"x-request-id": f"b-{i}"})
                assert response.status_code == 200
            assert receiver.spans == [] and receiver.metric_exports == 0
        # run_server's exit sent SIGTERM and waited for the process.
        assert server.process.returncode is not None
        spans = receiver.wait_until(
            lambda got: {"b-0", "b-1", "b-2"} <= {s.attributes.get("x_request_id") for s in got},
            timeout=10)
        assert {s.service_name for s in spans} == {"bare-app"}
        receiver.wait_for_metric_exports(1, timeout=10)
        # The readiness probes count too: at least the three requests sent.
        assert receiver.metric("ridtrace.requests", "bare-app", outcome="ok") >= 3
