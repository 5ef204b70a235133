"""`ridtrace serve` telemetry as an operator gets it: nothing lost at SIGTERM, the OTEL_*
environment honoured, and Prometheus metrics at GET /metrics equal to the traffic sent.

Real frontend and worker processes, a real OTLP/HTTP receiver decoding the protobuf.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.frontend_plugin.conftest import Proc, _spawn
from tests.support.otlp_receiver import (
    otlp_grpc_receiver,
    otlp_receiver,
    unresponsive_collector,
)
from tests.support.servers import child_pythonpath, free_port, stop_process, wait_until_serving

CHAT = "/v1/chat/completions"
# Far longer than the test: anything that arrives was flushed at shutdown.
LONG_DELAY = {"OTEL_BSP_SCHEDULE_DELAY": "120000", "OTEL_METRIC_EXPORT_INTERVAL": "120000"}


def _chat(marker: str) -> dict[str, object]:
    return {"model": "m", "messages": [{"role": "user", "content": marker}], "stream": False}


def _ready(*procs: Proc) -> None:
    for proc in procs:
        try:
            wait_until_serving(proc.url, proc.process, timeout=60, path="/health")
        except Exception as exc:
            raise RuntimeError(proc.stderr.read_text()) from exc


def test_sigterm_flushes_spans_and_metrics_and_the_environment_names_the_service(
    tmp_path: Path,
) -> None:
    with otlp_receiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, **LONG_DELAY}
        worker = _spawn(["worker"], tmp_path, "worker", {
            **env, "OTEL_RESOURCE_ATTRIBUTES": "service.name=attr-worker,deployment.environment=e2e",
        })
        frontend = _spawn(["frontend", "--worker", worker.url], tmp_path, "frontend", {
            **env, "OTEL_SERVICE_NAME": "env-gateway",
        })
        try:
            _ready(worker, frontend)
            sent = [f"c-{i}" for i in range(12)]
            with httpx.Client(base_url=frontend.url, timeout=30) as client:
                for i, client_id in enumerate(sent):
                    headers = {"x-request-id": client_id}
                    if i < 3:
                        headers["x-dynamo-request-id"] = f"old-{i}"
                    response = client.post(CHAT, json=_chat(f"m{i}"), headers=headers)
                    assert response.status_code == 200, response.text
            # The batch delay is long: nothing has been exported while serving.
            assert receiver.spans == [] and receiver.metric_exports == 0
        finally:
            stop_process(frontend.process)
            stop_process(worker.process)

        # Both processes exited; their last export completed before they did.
        spans = receiver.wait_for(24, timeout=20)
        front = {s.span_id: s for s in spans if s.attributes.get("x_request_id") in sent
                 and s.service_name == "env-gateway"}
        assert sorted(s.attributes["x_request_id"] for s in front.values()) == sorted(sent)
        hops = [s for s in spans if s.service_name == "attr-worker" and s.parent_span_id in front]
        assert len(hops) == 12
        assert {s.trace_id for s in hops} == {s.trace_id for s in front.values()}
        assert {s.service_name for s in spans} == {"env-gateway", "attr-worker"}

        receiver.wait_for_metric_exports(2, timeout=20)
        assert receiver.metric("ridtrace.requests", "env-gateway", route=CHAT, outcome="ok") == 12
        assert receiver.metric(
            "ridtrace.deprecated_header.requests", "env-gateway", header="x-dynamo-request-id"
        ) == 3
        assert receiver.metric("ridtrace.inflight", "env-gateway", side="frontend") == 0
        assert receiver.metric("ridtrace.inflight", "attr-worker", side="worker") == 0
        assert receiver.metric("ridtrace.requests", "attr-worker", route="/v1/work") == 12


@pytest.mark.parametrize("stop", [signal.SIGHUP, signal.SIGQUIT], ids=["SIGHUP", "SIGQUIT"])
def test_sighup_and_sigquit_stop_and_flush_as_sigterm_does(
    tmp_path: Path, stop: signal.Signals
) -> None:
    # Closing the terminal or ssh session that runs `ridtrace serve` sends SIGHUP: the
    # process died where it stood (status -1), with no span, metric or shutdown line out.
    # SIGQUIT, the stop signal of images and supervisors set up the nginx way, dumped
    # core the same way (status -3).
    if signal.getsignal(stop) == signal.SIG_IGN:
        # A shell's background job ignores SIGQUIT, and `serve` keeps a signal ignored.
        pytest.skip(f"{stop.name} is ignored here, and so in the server")
    with otlp_receiver() as receiver:
        worker = _spawn(["worker"], tmp_path, "worker", {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, **LONG_DELAY})
        try:
            _ready(worker)
            for i in range(3):
                response = httpx.get(worker.url + "/health", headers={"x-request-id": f"h-{i}"})
                assert response.status_code == 200
            worker.process.send_signal(stop)
            assert worker.process.wait(timeout=30) == 0
        finally:
            stop_process(worker.process)
        spans = receiver.wait_for(3, timeout=10)
        assert {"h-0", "h-1", "h-2"} <= {s.attributes.get("x_request_id") for s in spans}
        receiver.wait_for_metric_exports(1, timeout=10)
        assert receiver.metric("ridtrace.requests", route="/health") >= 3
    assert b'"event":"shutdown.drain"' in worker.log.read_bytes()


def test_under_nohup_a_hangup_leaves_it_serving(tmp_path: Path) -> None:
    # `nohup ridtrace serve …` is how it outlives the terminal: an ignored SIGHUP stays
    # ignored, and only a real stop ends it.
    port = free_port()
    process = subprocess.Popen(
        ["nohup", sys.executable, "-m", "ridtrace", "serve", "worker", "--port", str(port),
         "--log-file", str(tmp_path / "worker.jsonl")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        env={**os.environ, "PYTHONPATH": child_pythonpath(), "OTEL_EXPORTER_OTLP_ENDPOINT": ""},
        cwd=tmp_path,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(url, process, timeout=60, path="/health")
        process.send_signal(signal.SIGHUP)
        with pytest.raises(subprocess.TimeoutExpired):  # a handled hangup ends it in ~0.2 s
            process.wait(timeout=2)
        assert httpx.get(url + "/health", timeout=10).status_code == 200
    finally:
        stop_process(process)
    assert process.returncode == 0


@pytest.mark.extra("grpc")
def test_ctrl_c_flushes_over_otlp_grpc(tmp_path: Path) -> None:
    # The same promise over the other documented protocol (a collector's port 4317),
    # stopped the other documented way: Ctrl-C in the terminal, the whole group.
    with otlp_grpc_receiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
               "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", **LONG_DELAY}
        worker = _spawn(["worker"], tmp_path, "worker", env)
        frontend = _spawn(["frontend", "--worker", worker.url], tmp_path, "frontend", env)
        try:
            _ready(worker, frontend)
            with httpx.Client(base_url=frontend.url, timeout=30) as client:
                for i in range(4):
                    response = client.post(CHAT, json=_chat(f"g{i}"),
                                           headers={"x-request-id": f"g-{i}"})
                    assert response.status_code == 200, response.text
            assert receiver.spans == [] and receiver.metric_exports == 0
            for proc in (frontend, worker):
                os.killpg(proc.process.pid, signal.SIGINT)
            assert [proc.process.wait(timeout=30) for proc in (frontend, worker)] == [0, 0]
        finally:
            stop_process(frontend.process)
            stop_process(worker.process)
        spans = receiver.wait_for(8, timeout=10)
        front = {s.span_id for s in spans if s.service_name == "frontend"
                 and s.attributes.get("x_request_id", "").startswith("g-")}
        assert len(front) == 4
        hops = [s for s in spans if s.parent_span_id in front]
        assert len(hops) == 4 and all(s.service_name.startswith("worker-") for s in hops)
        assert all(s.attributes["request_id"] and s.attributes["x_request_id"] for s in hops)
        receiver.wait_for_metric_exports(2, timeout=10)
        assert receiver.metric("ridtrace.requests", "frontend", route=CHAT, outcome="ok") == 4


def test_a_hung_collector_holds_the_stop_for_one_export_timeout_not_one_per_batch(
    tmp_path: Path,
) -> None:
    # Spans queued while the collector hangs go out a batch at a time at shutdown, and
    # each batch waited the exporter's whole timeout: with a backlog of four default
    # batches (2048 spans, a full queue) a SIGTERM took 30 s, not the documented 10 s,
    # so a pod with Kubernetes' 30 s grace was killed. Batches of one span make each
    # request a batch; the exporter's timeout is one second.
    with unresponsive_collector() as endpoint:
        worker = _spawn(["worker"], tmp_path, "worker", {
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
            "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "1", **LONG_DELAY,
        })
        try:
            _ready(worker)
            with httpx.Client(base_url=worker.url, timeout=10) as client:
                for _ in range(12):
                    assert client.get("/health").status_code == 200
            stopped_at = time.monotonic()
            worker.process.send_signal(signal.SIGTERM)
            assert worker.process.wait(timeout=60) == 0
            took = time.monotonic() - stopped_at
        finally:
            stop_process(worker.process)
    # One export timeout and a margin (12 s or more, one per batch, before).
    assert took < 6, f"the stop took {took:.1f} s"


def test_sdk_disabled_exports_nothing(tmp_path: Path) -> None:
    with otlp_receiver() as receiver:
        worker = _spawn(["worker"], tmp_path, "worker", {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_SDK_DISABLED": "true",
            **LONG_DELAY,
        })
        try:
            _ready(worker)
            assert httpx.get(worker.url + "/health", timeout=10).status_code == 200
        finally:
            stop_process(worker.process)
        # Exports are synchronous in the shutdown, which ran before the exit: none came.
        assert receiver.requests == 0 and receiver.metric_exports == 0


def _scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = httpx.get(url + "/metrics", timeout=10).text
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _value(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str,
           **labels: str) -> float:
    return sum(v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= ls)


async def _traffic(frontend: Proc, worker: Proc) -> list[httpx.Response]:
    """Deprecated headers, hostile client ids and one duplicate id, all in flight at once."""
    async with httpx.AsyncClient(base_url=frontend.url, timeout=60) as client:
        plain = [
            *[{"x-request-id": f"dep-{i}", "x-dynamo-request-id": f"dep-{i}"} for i in range(3)],
            *[{"x-request-id": f"req-{i}", "request-id": f"req-{i}"} for i in range(2)],
            *[{"x-request-id": "x" * 300} for _ in range(2)],  # too long
        ]
        tasks = [
            asyncio.create_task(client.post(CHAT, json=_chat(f"p{i}"), headers=h))
            for i, h in enumerate(plain)
        ]
        # Non-ASCII bytes: h11 sends them (obs-text), ridtrace must not use them.
        tasks.append(asyncio.create_task(client.post(
            CHAT, json=_chat("latin"), headers=[(b"x-request-id", b"caf\xe9")]
        )))
        first = asyncio.create_task(
            client.post(CHAT, json=_chat("first"), headers={"x-request-id": "dup-1"})
        )
        # Every request waits at the worker's gate: the duplicate meets the first in flight.
        await asyncio.to_thread(_wait_worker_inflight, worker, len(tasks) + 1)
        duplicate = await client.post(CHAT, json=_chat("second"), headers={"x-request-id": "dup-1"})
        httpx.post(worker.url + "/debug/gate/open", timeout=5).raise_for_status()
        return [*(await asyncio.gather(*tasks, first)), duplicate]


def _wait_worker_inflight(worker: Proc, count: int) -> None:
    deadline = time.monotonic() + 30
    while httpx.get(worker.url + "/debug/inflight", timeout=5).json()["inflight"] < count:
        assert time.monotonic() < deadline, "requests did not reach the worker"
        time.sleep(0.02)


def test_metrics_endpoint_counts_what_was_sent(tmp_path: Path) -> None:
    """A legacy frontend (the pre-fix keying) forwards the duplicate id; the safe worker
    refuses it and the frontend's retry finds no other worker."""
    worker = _spawn(["worker", "--gate", "--debug-endpoints"], tmp_path, "worker")
    frontend = _spawn(["frontend", "--worker", worker.url, "--id-policy", "legacy"],
                      tmp_path, "frontend")
    try:
        _ready(worker, frontend)
        responses = asyncio.run(_traffic(frontend, worker))
        statuses = [r.status_code for r in responses]
        assert statuses[:-2] == [200] * 8, statuses
        duplicate = responses[-1]
        assert duplicate.status_code == 503, duplicate.text
        # Releases run as responses finish: poll until both tables are empty again.
        deadline = time.monotonic() + 20
        while True:
            front, back = _scrape(frontend.url), _scrape(worker.url)
            if (_value(front, "ridtrace_inflight", side="frontend") == 0
                    and _value(back, "ridtrace_inflight", side="worker") == 0):
                break
            assert time.monotonic() < deadline, (front, back)
            time.sleep(0.05)
    finally:
        stop_process(frontend.process)
        stop_process(worker.process)

    ends = [line for line in frontend.lines()
            if line.get("event") == "request.end" and line.get("route") == CHAT]
    assert len(ends) == 10
    by_outcome: dict[str, int] = {}
    for line in ends:
        by_outcome[str(line["outcome"])] = by_outcome.get(str(line["outcome"]), 0) + 1
    for outcome, count in by_outcome.items():
        assert _value(front, "ridtrace_requests_total", route=CHAT, outcome=outcome) == count
    assert _value(front, "ridtrace_requests_total", route=CHAT) == 10
    assert _value(front, "ridtrace_deprecated_header_requests_total",
                  header="x-dynamo-request-id") == 3
    assert _value(front, "ridtrace_deprecated_header_requests_total", header="request-id") == 2
    assert _value(front, "ridtrace_client_id_rejected_total", reason="too_long") == 2
    assert _value(front, "ridtrace_client_id_rejected_total", reason="not_printable_ascii") == 1
    assert _value(back, "ridtrace_duplicate_refused_total", side="worker") == 1
    assert _value(front, "ridtrace_conflict_retries_total") == 1
    assert _value(front, "ridtrace_duplicate_refused_total") == 0  # legacy replaces instead
    assert _value(front, "ridtrace_inflight", side="frontend") == 0
    assert _value(back, "ridtrace_inflight", side="worker") == 0
    assert _value(back, "ridtrace_requests_total", route="/v1/work") == 10
