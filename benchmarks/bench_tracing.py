"""Per-request cost of ridtrace's tracing middleware against its anchors (issue 2).

Contenders, all serving the same one-route app (``GET /`` -> small JSON body):

* ``starlette`` / ``fastapi``: the bare apps. FastAPI is built with
  ``telemetry={"tracing": False, "metrics": False, "logs": False}`` so its built-in
  OpenTelemetry support can never open spans, and no global tracer provider is ever
  set in this process or in the servers, so nothing turns on behind our back.
* ``+asgi-correlation-id``: ``CorrelationIdMiddleware`` with its defaults.
* ``+otel-fastapi``: ``FastAPIInstrumentor.instrument_app`` with an SDK
  ``TracerProvider`` passed explicitly (``SimpleSpanProcessor`` to an exporter that
  counts and discards spans) and a no-op meter provider; its default internal
  send/receive spans stay on (that is what the library costs out of the box).
* ``+ridtrace id-only``: ``RequestTracingMiddleware(log_lifecycle=False)`` with no
  tracer provider: the global provider is the API's proxy, so the span is the no-op
  one; ridtrace still mints, validates, echoes and sets the context (ids included).
* ``+ridtrace full``: the same middleware with the SDK provider above passed as
  ``tracer_provider=`` and ``ridtrace.configure_logging`` writing both lifecycle
  lines of every request to a JSON-lines file.
* ``... + metrics`` (in process only): the same two with ridtrace's instruments bound
  to an SDK ``MeterProvider`` (an in-memory reader, never collected during the run), so
  every request also counts ``ridtrace.requests``. Every other contender runs with no
  meter provider, which is what the plain rows measure.

Every request sends a valid UUID4 ``x-request-id`` (asgi-correlation-id keeps it,
ridtrace validates and echoes it and mints its own id).

Two harnesses, contenders interleaved round-robin within one run, medians reported:

* in process: the ASGI app is awaited directly with a constant ``receive`` and a
  no-op ``send`` (no HTTP client, no server) -> thread CPU and wall microseconds per
  request;
* uvicorn: each contender in its own uvicorn subprocess (1 worker, access log off,
  pinned to one CPU) under ``wrk`` pinned to the other CPU (or, when wrk is missing,
  a small asyncio load generator) -> requests/s, p50/p99 latency, and the server
  process's CPU time per request (from /proc), which other tenants of a shared
  machine disturb far less than requests/s.

Usage: ``.venv/bin/python benchmarks/bench_tracing.py [--quick] [--contenders a,b]``;
prints markdown.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ridtrace.demo.processes import free_port

ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]

CLIENT_ID = str(uuid.uuid4())
SERVER_CPU, LOADGEN_CPU = 1, 0

# --------------------------------------------------------------------------- apps


class _CountingExporter:
    """A span exporter that counts what it is given and keeps nothing."""

    def __init__(self) -> None:
        self.count = 0

    def export(self, spans: Sequence[Any]) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        self.count += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _sdk_provider() -> tuple[Any, _CountingExporter]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    exporter = _CountingExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))  # type: ignore[arg-type]
    return provider, exporter


def _starlette_app() -> Any:
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def root(request: Any) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    return Starlette(routes=[Route("/", root)])


def _fastapi_app() -> Any:
    from fastapi import FastAPI

    app = FastAPI(telemetry={"tracing": False, "metrics": False, "logs": False})

    @app.get("/")
    async def root() -> dict[str, str]:
        return {"status": "ok"}

    return app


@dataclass
class Built:
    app: Any
    exporter: _CountingExporter | None = None
    log_path: Path | None = None
    spans_per_request: int = 0
    lines_per_request: int = 0
    expect_headers: tuple[bytes, ...] = ()
    instruments: Any = None  # ridtrace's metrics, bound only while this contender runs


_LOGGING_TO: set[Path] = set()


def build(name: str, log_dir: Path) -> Built:
    """Build one contender; ``log_dir`` receives ridtrace-full's JSON lines."""
    framework, _, variant = name.partition("@")[0].partition("+")
    if variant.endswith("+metrics"):
        built = build(name.replace("+metrics", ""), log_dir)
        built.instruments = _instruments()
        return built
    app = _starlette_app() if framework == "starlette" else _fastapi_app()
    if not variant:
        return Built(app)
    if variant == "asgi-correlation-id":
        from asgi_correlation_id import CorrelationIdMiddleware

        app.add_middleware(CorrelationIdMiddleware)
        return Built(app, expect_headers=(b"x-request-id",))
    if variant == "otel-fastapi":
        from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
        from opentelemetry.metrics import NoOpMeterProvider

        provider, exporter = _sdk_provider()
        FastAPIInstrumentor.instrument_app(
            app, tracer_provider=provider, meter_provider=NoOpMeterProvider()
        )
        # server span + internal spans for http.response.start and http.response.body
        return Built(app, exporter=exporter, spans_per_request=3)
    from ridtrace import RequestTracingMiddleware, configure_logging

    if variant == "ridtrace-id":
        app.add_middleware(RequestTracingMiddleware, log_lifecycle=False)
        return Built(app, expect_headers=(b"x-request-id", b"x-server-request-id"))
    if variant == "ridtrace-full":
        provider, exporter = _sdk_provider()
        log_path = log_dir / "ridtrace-full.jsonl"
        if log_path not in _LOGGING_TO:  # loguru is process-wide: one sink per process
            from loguru import logger

            logger.remove()  # no stderr handler: only the JSON-lines file is written
            configure_logging(log_path, service="bench", intercept_stdlib=False)
            _LOGGING_TO.add(log_path)
        app.add_middleware(RequestTracingMiddleware, tracer_provider=provider)
        return Built(
            app,
            exporter=exporter,
            log_path=log_path,
            spans_per_request=1,
            lines_per_request=2,
            expect_headers=(b"x-request-id", b"x-server-request-id"),
        )
    raise SystemExit(f"unknown contender {name!r}")


def _instruments() -> Any:
    """ridtrace's instruments on an SDK meter provider, to bind per batch (below)."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from ridtrace.tracing import metrics

    return metrics.Instruments(
        MeterProvider(metric_readers=[InMemoryMetricReader()]).get_meter("ridtrace")
    )


def _bind(instruments: Any) -> None:
    # The module global the call sites read (what bind_meter_provider sets): swapped per
    # batch so the plain contenders of the same run keep measuring "no meter provider".
    if instruments is not None or "ridtrace.tracing.metrics" in sys.modules:
        from ridtrace.tracing import metrics

        metrics._active = instruments


INPROC = [
    "starlette",
    "starlette+asgi-correlation-id",
    "starlette+ridtrace-id",
    "starlette+ridtrace-full",
    "fastapi",
    "fastapi+asgi-correlation-id",
    "fastapi+otel-fastapi",
    "fastapi+ridtrace-id",
    "fastapi+ridtrace-full",
    "fastapi+ridtrace-id+metrics",
    "fastapi+ridtrace-full+metrics",
    # "@noid": the client sends no x-request-id, so asgi-correlation-id mints one too
    "fastapi@noid",
    "fastapi+asgi-correlation-id@noid",
    "fastapi+ridtrace-id@noid",
]
SERVED = [
    "starlette",
    "fastapi",
    "fastapi+asgi-correlation-id",
    "fastapi+otel-fastapi",
    "fastapi+ridtrace-id",
    "fastapi+ridtrace-full",
]
LABELS = {
    "starlette": "Starlette, bare",
    "starlette+asgi-correlation-id": "Starlette + asgi-correlation-id",
    "starlette+ridtrace-id": "Starlette + ridtrace id-only",
    "starlette+ridtrace-full": "Starlette + ridtrace full",
    "fastapi": "FastAPI, bare",
    "fastapi+asgi-correlation-id": "FastAPI + asgi-correlation-id",
    "fastapi+otel-fastapi": "FastAPI + otel-instrumentation-fastapi",
    "fastapi+ridtrace-id": "FastAPI + ridtrace id-only",
    "fastapi+ridtrace-full": "FastAPI + ridtrace full",
    "fastapi+ridtrace-id+metrics": "FastAPI + ridtrace id-only + metrics (SDK meter provider)",
    "fastapi+ridtrace-full+metrics": "FastAPI + ridtrace full + metrics (SDK meter provider)",
    "fastapi@noid": "FastAPI, bare — no client x-request-id",
    "fastapi+asgi-correlation-id@noid": "FastAPI + asgi-correlation-id — no client x-request-id",
    "fastapi+ridtrace-id@noid": "FastAPI + ridtrace id-only — no client x-request-id",
}


def _assert_no_global_provider() -> None:
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    if type(provider).__name__ != "ProxyTracerProvider":
        raise SystemExit(f"a global tracer provider is set ({provider!r}); results would lie")


# ------------------------------------------------------------------ in process

_HEADERS = [
    (b"host", b"127.0.0.1:8000"),
    (b"user-agent", b"bench/1.0"),
    (b"accept", b"*/*"),
    (b"x-request-id", CLIENT_ID.encode()),
]
_SCOPE = {
    "type": "http",
    "asgi": {"version": "3.0", "spec_version": "2.3"},
    "http_version": "1.1",
    "method": "GET",
    "scheme": "http",
    "path": "/",
    "raw_path": b"/",
    "root_path": "",
    "query_string": b"",
    "client": ("127.0.0.1", 50000),
    "server": ("127.0.0.1", 8000),
}
_REQUEST = {"type": "http.request", "body": b"", "more_body": False}


_HEADERS_NOID = _HEADERS[:-1]


def _scope(headers: list[tuple[bytes, bytes]] = _HEADERS) -> dict[str, Any]:
    scope = dict(_SCOPE)
    scope["headers"] = list(headers)
    scope["state"] = {}
    return scope


async def _receive() -> dict[str, Any]:
    return _REQUEST


async def _send(message: dict[str, Any]) -> None:
    pass


async def _check(name: str, built: Built) -> None:
    """One request with a recording ``send``: the contender does what it claims."""
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    spans_before = built.exporter.count if built.exporter else 0
    lines_before = _line_count(built.log_path)
    _bind(built.instruments)
    try:
        await built.app(_scope(), _receive, send)
        # A loop turn, as a server has between requests: ridtrace's event lines
        # written on the loop go out at the next turn (docs/tracing.md).
        await asyncio.sleep(0)
    finally:
        _bind(None)
    start = sent[0]
    headers = {k for k, _ in start["headers"]}
    problems = []
    if start["status"] != 200:
        problems.append(f"status {start['status']}")
    problems += [f"no {h.decode()} header" for h in built.expect_headers if h not in headers]
    if built.exporter and built.exporter.count - spans_before != built.spans_per_request:
        problems.append(f"{built.exporter.count - spans_before} spans exported")
    if _line_count(built.log_path) - lines_before != built.lines_per_request:
        problems.append("lifecycle lines missing")
    if problems:
        raise SystemExit(f"{name}: {', '.join(problems)}")


def _line_count(path: Path | None) -> int:
    return path.read_bytes().count(b"\n") if path and path.exists() else 0


async def _batch(
    app: ASGIApp, n: int, headers: list[tuple[bytes, bytes]], instruments: Any = None
) -> tuple[float, float]:
    """(CPU, wall) microseconds per request. CPU time is the headline: on a shared
    machine it does not count the time this thread waited for a core."""
    gc.collect()
    _bind(instruments)
    try:
        cpu, wall = time.thread_time_ns(), time.perf_counter_ns()
        for _ in range(n):
            await app(_scope(headers), _receive, _send)
            # A loop turn per request, as a server has at least: ridtrace's event lines
            # are written at the next turn, and that write belongs to the request.
            await asyncio.sleep(0)
        cpu, wall = time.thread_time_ns() - cpu, time.perf_counter_ns() - wall
    finally:
        _bind(None)
    return cpu / n / 1000, wall / n / 1000


def run_inprocess(
    names: list[str], rounds: int, per_batch: int, log_dir: Path
) -> dict[str, list[tuple[float, float]]]:
    _assert_no_global_provider()
    built = {name: build(name, log_dir) for name in names}
    _assert_no_global_provider()
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    headers = {name: _HEADERS_NOID if name.endswith("@noid") else _HEADERS for name in names}

    async def main() -> None:
        for name in names:
            await _check(name, built[name])
            await _batch(built[name].app, 500, headers[name], built[name].instruments)  # warm-up
        for r in range(rounds):
            shift = r % len(names)
            for name in names[shift:] + names[:shift]:
                samples[name].append(
                    await _batch(built[name].app, per_batch, headers[name], built[name].instruments)
                )
            _progress(f"in-process round {r + 1}/{rounds}")

    pin = _pin(SERVER_CPU)  # one core throughout, as the served contenders get
    before = os.sched_getaffinity(0) if pin else None
    if pin:
        pin()
    try:
        asyncio.run(main())
    finally:
        if before is not None:
            os.sched_setaffinity(0, before)
    return samples


# ---------------------------------------------------------------------- uvicorn


def serve(name: str, port: int, log_dir: Path) -> None:
    """Subprocess entry point: one contender under uvicorn, 1 worker, access log off."""
    import uvicorn

    built = build(name, log_dir)
    _assert_no_global_provider()
    uvicorn.run(
        built.app,
        host="127.0.0.1",
        port=port,
        workers=1,
        access_log=False,
        log_level="warning",
    )


def _pin(cpu: int) -> Callable[[], None] | None:
    if not hasattr(os, "sched_setaffinity") or (os.cpu_count() or 1) < 2:
        return None
    return lambda: os.sched_setaffinity(0, {cpu})


def _wait_ready(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    import http.client

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server on port {port} exited with {proc.returncode}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            conn.request("GET", "/", headers={"x-request-id": CLIENT_ID})
            if conn.getresponse().status == 200:
                conn.close()
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"server on port {port} never answered")


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def _ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s)", text.strip())
    if not match:
        raise ValueError(f"unparsable wrk latency {text!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


def _wrk(url: str, seconds: float, connections: int) -> dict[str, float]:
    cmd = [
        "wrk",
        "-t1",
        f"-c{connections}",
        f"-d{seconds:g}s",
        "--latency",
        "--timeout",
        "10s",
        "-H",
        f"x-request-id: {CLIENT_ID}",
        url,
    ]
    out = _run_loadgen(cmd, seconds)
    if "Non-2xx" in out:
        raise SystemExit(f"wrk saw error responses from {url}:\n{out}")
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    requests = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    p50 = _ms(re.search(r"\s50%\s+(\S+)", out).group(1))  # type: ignore[union-attr]
    p99 = _ms(re.search(r"\s99%\s+(\S+)", out).group(1))  # type: ignore[union-attr]
    socket_errors = sum(int(n) for n in errors.groups()) if errors else 0
    return {"rps": rps, "p50": p50, "p99": p99, "errors": socket_errors, "requests": requests}


def _pyload(url: str, seconds: float, connections: int) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--load", url, "--seconds", str(seconds)]
    cmd += ["--connections", str(connections)]
    return dict(json.loads(_run_loadgen(cmd, seconds)))


def _run_loadgen(cmd: list[str], seconds: float) -> str:
    """Run a load generator pinned to its CPU; its standard output."""
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=seconds + 30,
        check=True,
        preexec_fn=_pin(LOADGEN_CPU),
    ).stdout


def pyload(url: str, seconds: float, connections: int) -> None:
    """Fallback load generator: keep-alive HTTP/1.1 over raw asyncio streams."""
    host_port = url.split("//", 1)[1].split("/", 1)[0]
    host, port = host_port.rsplit(":", 1)
    request = (
        f"GET / HTTP/1.1\r\nhost: {host_port}\r\nuser-agent: bench/1.0\r\n"
        f"accept: */*\r\nx-request-id: {CLIENT_ID}\r\n\r\n"
    ).encode()
    latencies: list[float] = []

    async def worker(deadline: float) -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        while time.perf_counter() < deadline:
            sent = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 200"):
                raise SystemExit(f"bad response {head[:40]!r}")
            length = re.search(rb"(?i)content-length:\s*(\d+)", head)
            await reader.readexactly(int(length.group(1)) if length else 0)
            latencies.append(time.perf_counter() - sent)
        writer.close()

    async def main() -> float:
        started = time.perf_counter()
        await asyncio.gather(*(worker(started + seconds) for _ in range(connections)))
        return time.perf_counter() - started

    elapsed = asyncio.run(main())
    latencies.sort()
    print(
        json.dumps(
            {
                "rps": len(latencies) / elapsed,
                "requests": len(latencies),
                "p50": latencies[len(latencies) // 2] * 1e3,
                "p99": latencies[int(len(latencies) * 0.99)] * 1e3,
            }
        )
    )


def _cpu_seconds(pid: int) -> float:
    """user+system CPU seconds of ``pid`` (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_served(
    names: list[str], rounds: int, seconds: float, connections: int, log_dir: Path, tool: str
) -> dict[str, list[dict[str, float]]]:
    load = _wrk if tool == "wrk" else _pyload
    servers: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "FASTAPI_OTEL"))}
    try:
        for name in names:
            port = free_port()
            cmd = [sys.executable, __file__, "--serve", name, "--port", str(port)]
            proc = subprocess.Popen(
                [*cmd, "--log-dir", str(log_dir)], env=env, preexec_fn=_pin(SERVER_CPU)
            )
            url = f"http://127.0.0.1:{port}/"
            servers[name] = (proc, url)
            _wait_ready(port, proc)
            load(url, min(seconds, 1.0), connections)  # warm-up, not recorded
        for r in range(rounds):
            shift = r % len(names)
            for name in names[shift:] + names[:shift]:
                proc, url = servers[name]
                cpu_before = _cpu_seconds(proc.pid)
                run = load(url, seconds, connections)
                cpu = _cpu_seconds(proc.pid) - cpu_before
                # Server CPU per request: robust to the load generator's and other
                # tenants' share of the machine, unlike requests/s.
                run["cpu_us"] = cpu * 1e6 / run["requests"] if cpu > 0 else 1e6 / run["rps"]
                samples[name].append(run)
            _progress(f"uvicorn round {r + 1}/{rounds}")
    finally:
        for proc, _ in servers.values():
            proc.terminate()
        for proc, _ in servers.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    return samples


# --------------------------------------------------------------------- report


def _med(values: list[float]) -> float:
    return statistics.median(values)


def _paired_overhead(samples: list[float], bare: list[float]) -> float:
    """Median of per-round differences: interleaving makes rounds comparable."""
    return _med([c - b for c, b in zip(samples, bare, strict=True)])


def _bare_of(name: str) -> str:
    framework, _, variant = name.partition("+")
    return framework + ("@noid" if variant.endswith("@noid") else "")


def _ratio(numerator: float, denominator: float) -> str:
    return f"{numerator / denominator:.2f}×" if denominator > 0 else "n/a"


def _targets(overhead: dict[str, float], prefix: str) -> list[str]:
    names = ("+ridtrace-full", "+otel-fastapi", "+ridtrace-id", "+asgi-correlation-id")
    if any(prefix + n not in overhead for n in names):
        return []  # a subset of contenders was measured
    full, otel = overhead[f"{prefix}+ridtrace-full"], overhead[f"{prefix}+otel-fastapi"]
    ids, acid = overhead[f"{prefix}+ridtrace-id"], overhead[f"{prefix}+asgi-correlation-id"]
    return [
        f"ridtrace full / otel-fastapi overhead = {_ratio(full, otel)} "
        f"(target ≤ 0.50×: {_verdict(full, otel, 0.5)})",
        f"ridtrace id-only / asgi-correlation-id overhead = {_ratio(ids, acid)} "
        f"(target ≤ 1.20×: {_verdict(ids, acid, 1.2)})",
    ]


def _verdict(cost: float, anchor: float, limit: float) -> str:
    # An anchor whose paired overhead came out at or below zero is lost in the noise:
    # no ratio to it means anything, so say that rather than "met".
    if anchor <= 0:
        return "not measurable: the anchor's overhead is below this harness's noise"
    return "met" if cost <= limit * anchor else "MISSED"


def report_inprocess(
    samples: dict[str, list[tuple[float, float]]], rounds: int, per_batch: int
) -> list[str]:
    lines = [
        f"### In process (ASGI app awaited directly; {rounds} rounds × {per_batch} requests "
        "per contender, medians)",
        "",
        "| contender | CPU µs/request | overhead µs | × bare | wall µs/request | wall overhead µs |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    overhead: dict[str, float] = {}
    for name, runs in samples.items():
        is_bare = name == _bare_of(name)
        cpu, wall = [run[0] for run in runs], [run[1] for run in runs]
        bare_cpu = [run[0] for run in samples[_bare_of(name)]]
        bare_wall = [run[1] for run in samples[_bare_of(name)]]
        overhead[name] = 0.0 if is_bare else _paired_overhead(cpu, bare_cpu)
        over = "—" if is_bare else f"{overhead[name]:+.1f}"
        wall_over = "—" if is_bare else f"{_paired_overhead(wall, bare_wall):+.1f}"
        lines.append(
            f"| {LABELS[name]} | {_med(cpu):.1f} | {over} | {_med(cpu) / _med(bare_cpu):.2f} | "
            f"{_med(wall):.1f} | {wall_over} |"
        )
    return [*lines, "", *(f"- {t}" for t in _targets(overhead, "fastapi")), *side_ratios(overhead)]


def side_ratios(overhead: dict[str, float]) -> list[str]:
    """Id-only vs asgi-correlation-id on Starlette and without a client id, when measured."""
    out = []
    for ids, acid, label in (
        ("starlette+ridtrace-id", "starlette+asgi-correlation-id", "(Starlette)"),
        ("fastapi+ridtrace-id@noid", "fastapi+asgi-correlation-id@noid", "(no client x-request-id)"),
    ):
        if ids in overhead and acid in overhead:
            ratio = _ratio(overhead[ids], overhead[acid])
            out.append(f"- {label} ridtrace id-only / asgi-correlation-id = {ratio}")
    return out


def report_served(
    samples: dict[str, list[dict[str, float]]],
    rounds: int,
    seconds: float,
    connections: int,
    tool: str,
) -> list[str]:
    lines = [
        f"### Through uvicorn ({tool}, {connections} connections, {rounds} rounds × "
        f"{seconds:g} s per contender, medians)",
        "",
        "| contender | requests/s | p50 ms | p99 ms | server CPU µs/request | overhead µs | × bare rps |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    overhead: dict[str, float] = {}
    for name, runs in samples.items():
        bare = samples[_bare_of(name)]
        cost = [run["cpu_us"] for run in runs]
        bare_cost = [run["cpu_us"] for run in bare]
        rps = _med([run["rps"] for run in runs])
        is_bare = name == _bare_of(name)
        overhead[name] = 0.0 if is_bare else _paired_overhead(cost, bare_cost)
        lines.append(
            f"| {LABELS[name]} | {rps:,.0f} | {_med([run['p50'] for run in runs]):.2f} | "
            f"{_med([run['p99'] for run in runs]):.2f} | {_med(cost):.1f} | "
            f"{'—' if is_bare else f'{overhead[name]:+.1f}'} | "
            f"{rps / _med([run['rps'] for run in bare]):.2f} |"
        )
    lines += ["", *(f"- {t}" for t in _targets(overhead, "fastapi"))]
    errors = {n: sum(int(run.get("errors", 0)) for run in runs) for n, runs in samples.items()}
    if any(errors.values()):
        noisy = ", ".join(f"{LABELS[n]}: {e}" for n, e in errors.items() if e)
        lines.append(f"- socket errors/timeouts seen by the load generator (noisy machine?): {noisy}")
    return lines


def _versions() -> str:
    from importlib.metadata import version

    pkgs = [
        "fastapi",
        "starlette",
        "uvicorn",
        "asgi-correlation-id",
        "opentelemetry-sdk",
        "opentelemetry-instrumentation-fastapi",
        "loguru",
        "orjson",
    ]
    found = []
    for pkg in pkgs:
        try:
            found.append(f"{pkg} {version(pkg)}")
        except Exception:
            found.append(f"{pkg} (missing)")
    return ", ".join(found)


def _server_stack() -> str:
    from importlib.util import find_spec

    loop = "uvloop" if find_spec("uvloop") else "asyncio"
    http = "httptools" if find_spec("httptools") else "h11"
    return f"uvicorn loop={loop}, http={http}"


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few short rounds (smoke run)")
    parser.add_argument("--rounds", type=int, help="rounds per harness")
    parser.add_argument("--skip-inprocess", action="store_true")
    parser.add_argument(
        "--contenders", help="comma-separated in-process contenders (default: all)"
    )
    parser.add_argument("--skip-uvicorn", action="store_true")
    parser.add_argument(
        "--load-generator",
        choices=["auto", "wrk", "python"],
        default="auto",
        help="auto: wrk when installed, else the built-in asyncio generator",
    )
    # internal: subprocess entry points
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--log-dir", help=argparse.SUPPRESS)
    parser.add_argument("--load", help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=3.0, help=argparse.SUPPRESS)
    parser.add_argument("--connections", type=int, default=8, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.serve:
        serve(args.serve, args.port, Path(args.log_dir))
        return 0
    if args.load:
        pyload(args.load, args.seconds, args.connections)
        return 0

    # Many short rounds. On a shared machine a core's speed changes by up to 2x in
    # phases of about a second; a round must be much shorter than that, or the bare
    # app and a contender of the same round run at different speeds and their
    # difference is noise (12 contenders x 500 requests took about a second a round).
    in_rounds, per_batch = (10, 100) if args.quick else (500, 100)
    up_rounds, seconds = (2, 1.0) if args.quick else (12, 3.0)
    if args.rounds:
        in_rounds = up_rounds = args.rounds
    tool = args.load_generator
    if tool == "auto":
        tool = "wrk" if shutil.which("wrk") else "python"
        if tool == "python":
            _progress(
                "wrk not found: falling back to the built-in asyncio load generator, which "
                "competes harder for CPU. Install wrk for the reference numbers: "
                "`sudo apt-get install -y wrk` (Debian/Ubuntu) or `brew install wrk`."
            )
    elif tool == "wrk" and not shutil.which("wrk"):
        raise SystemExit("wrk is not installed: `sudo apt-get install -y wrk` or `brew install wrk`")

    out = [
        "## Tracing middleware benchmark",
        "",
        f"- machine: {platform.machine()}, {os.cpu_count()} CPUs, {_cpu_model()}, "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}",
        f"- {_versions()}",
        "",
    ]
    with tempfile.TemporaryDirectory(prefix="ridtrace-bench-") as tmp:
        log_dir = Path(tmp)
        if not args.skip_inprocess:
            pin = _pin(SERVER_CPU)
            if pin:
                pin()
            names = args.contenders.split(",") if args.contenders else INPROC
            samples = run_inprocess(names, in_rounds, per_batch, log_dir)
            if pin:
                os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
            out += [*report_inprocess(samples, in_rounds, per_batch), ""]
            _progress("\n".join(out))  # kept even if the served harness fails later
        if not args.skip_uvicorn:
            connections = 8
            served = run_served(SERVED, up_rounds, seconds, connections, log_dir, tool)
            out += [
                *report_served(served, up_rounds, seconds, connections, tool),
                f"- {_server_stack()}; server pinned to CPU {SERVER_CPU}, load generator "
                f"to CPU {LOADGEN_CPU}",
                "",
            ]
    print("\n".join(out))
    return 0


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


if __name__ == "__main__":
    sys.exit(main())
