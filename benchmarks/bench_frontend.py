"""Frontend plugin throughput against a bare FastAPI+httpx proxy to the same worker (issue 3).

Contenders, each a uvicorn subprocess (1 process, access log off) in front of the same
echo worker (token delay 0), all serving ``POST /v1/completions`` (non-streaming; the
reply is collected from the worker's NDJSON stream):

* ``bare proxy``: FastAPI route that builds the work envelope, streams it from the
  worker with httpx and returns a completions body. No middleware, no logging.
* ``bare proxy + tracing``: the same plus ``RequestTracingMiddleware`` and
  ``configure_logging`` writing the two lifecycle lines of every request to a file —
  what the tracing layer alone costs (issue 2 measures that part).
* ``plugin, no logs``: ``create_frontend_app`` with lifecycle lines off and no sink:
  identity minting, validation, registry, dispatcher, pump, chunk-id checks.
* ``plugin``: ``create_frontend_app`` as ``ridtrace serve frontend`` runs it, lifecycle
  lines and annotations written to a JSON-lines file.

Proxy servers are pinned to CPU 0, the worker and ``wrk`` to CPU 1 (when ``taskset``
exists); rounds are interleaved (every contender once per round, order rotated) and
medians reported. A second table times ``InflightRegistry.register``/``release``.

Usage: ``.venv/bin/python benchmarks/bench_frontend.py [--rounds 5] [--seconds 3]``
"""


# No `from __future__ import annotations`: FastAPI must resolve the route's `Request`
# annotation, which is imported inside bare_app so the parent never loads FastAPI.
import argparse
import asyncio
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BODY = '{"prompt": "the quick brown fox jumps over the lazy dog", "max_tokens": 64}'
CONTENDERS = ("bare proxy", "bare proxy + tracing", "plugin, no logs", "plugin")
LUA = f"""
wrk.method = "POST"
wrk.body = '{BODY}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["x-request-id"] = "bench-client-1"
"""


def bare_app(worker: str, *, traced: bool) -> Any:
    """The anchor: the least a FastAPI proxy to this worker has to do."""
    import httpx
    import orjson
    from fastapi import FastAPI
    from starlette.requests import Request
    from starlette.responses import Response

    from ridtrace.tracing import RequestTracingMiddleware, uuid4_id

    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    state: dict[str, httpx.AsyncClient] = {}

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        client = state.get("client")
        if client is None:
            limits = httpx.Limits(max_connections=1024, max_keepalive_connections=1024)
            client = state["client"] = httpx.AsyncClient(limits=limits, timeout=30)
        body = orjson.loads(await request.body())
        rid = uuid4_id()
        envelope = orjson.dumps({
            "request_id": rid, "x_request_id": None, "endpoint": "completions",
            "model": "echo", "prompt": body["prompt"], "max_tokens": body.get("max_tokens", 256),
        })
        parts: list[str] = []
        async with client.stream("POST", worker + "/v1/work", content=envelope,
                                 headers={"content-type": "application/json"}) as resp:
            async for line in resp.aiter_lines():
                if line:
                    message = orjson.loads(line)
                    if "text" in message:
                        parts.append(message["text"])
        return Response(orjson.dumps({
            "id": "cmpl-" + rid, "object": "text_completion", "model": "echo",
            "choices": [{"index": 0, "text": "".join(parts), "finish_reason": "stop"}],
        }), media_type="application/json")

    if traced:
        app.add_middleware(RequestTracingMiddleware)
    return app


def serve(name: str, port: int, worker: str, log_dir: Path) -> None:
    """Child process: run one contender."""
    import uvicorn
    from loguru import logger

    from ridtrace.frontend_plugin import FrontendSettings, create_frontend_app
    from ridtrace.tracing import TracingSettings, configure_logging

    logger.remove()
    slug = re.sub(r"\W+", "-", name)
    if name in ("bare proxy + tracing", "plugin"):
        configure_logging(log_dir / f"{slug}.jsonl", service=slug)
    if name.startswith("bare"):
        app = bare_app(worker, traced=name.endswith("tracing"))
    else:
        tracing = TracingSettings(log_lifecycle=name == "plugin")
        app = create_frontend_app(FrontendSettings(workers=(worker,)), tracing=tracing)
    uvicorn.run(app, host="127.0.0.1", port=port, log_config=None, access_log=False)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pin(cpu: int) -> list[str]:
    return ["taskset", "-c", str(cpu)] if shutil.which("taskset") and os.cpu_count() else []


def _start(argv: list[str], port: int) -> subprocess.Popen[bytes]:
    import httpx

    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
            return proc
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"{argv} did not start")


def _wrk(url: str, seconds: float, connections: int, script: Path) -> dict[str, float]:
    out = subprocess.run(
        [*_pin(1), "wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s", "--latency",
         "-s", str(script), url],
        capture_output=True, text=True, check=True,
    ).stdout
    if "Non-2xx" in out or ("Socket errors" in out and "timeout" in out):
        raise SystemExit(f"errors from {url}:\n{out}")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    return {"rps": rps, "p50": _ms(out, "50%"), "p99": _ms(out, "99%")}


def _ms(out: str, label: str) -> float:
    value, unit = re.search(rf"{label}\s+([\d.]+)(us|ms|s)", out).groups()  # type: ignore[union-attr]
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def registry_ops(n: int = 200_000) -> float:
    """register+release pairs per second, in process."""
    from ridtrace.frontend_plugin import InflightRegistry

    async def run() -> float:
        registry = InflightRegistry()
        channel: asyncio.Queue[object] = asyncio.Queue()
        keys = [f"k{i}" for i in range(n)]
        start = time.perf_counter()
        for key in keys:
            registry.register(key, channel)
            registry.release(key, channel)
        return n / (time.perf_counter() - start)

    return statistics.median(asyncio.run(run()) for _ in range(5))


def _paired(rps: list[float], anchor: list[dict[str, float]]) -> str:
    """Median of per-round relative differences, with their spread across rounds."""
    changes = sorted(r / a["rps"] - 1 for r, a in zip(rps, anchor, strict=True))
    return f"{statistics.median(changes):+.1%} ({changes[0]:+.0%}…{changes[-1]:+.0%})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--log-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port, args.worker, args.log_dir)
        return
    if not shutil.which("wrk"):
        raise SystemExit("wrk is required (apt-get install wrk)")
    log_dir = Path(tempfile.mkdtemp(prefix="ridtrace-bench-frontend-"))
    script = log_dir / "post.lua"
    script.write_text(LUA)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        wport = _free_port()
        procs.append(_start([*_pin(1), sys.executable, "-m", "ridtrace", "serve", "worker",
                             "--port", str(wport), "--log-file", str(log_dir / "worker.jsonl")],
                            wport))
        worker = f"http://127.0.0.1:{wport}"
        ports: dict[str, int] = {}
        for name in CONTENDERS:
            ports[name] = _free_port()
            procs.append(_start([*_pin(0), sys.executable, __file__, "--serve", name, "--port",
                                 str(ports[name]), "--worker", worker, "--log-dir",
                                 str(log_dir)], ports[name]))
        results: dict[str, list[dict[str, float]]] = {n: [] for n in CONTENDERS}
        for name in CONTENDERS:  # warm-up
            _wrk(f"http://127.0.0.1:{ports[name]}/v1/completions", 1, args.connections, script)
        for round_no in range(args.rounds):
            order = CONTENDERS[round_no % 4:] + CONTENDERS[: round_no % 4]
            for name in order:
                url = f"http://127.0.0.1:{ports[name]}/v1/completions"
                results[name].append(_wrk(url, args.seconds, args.connections, script))
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(10)
    print(f"{args.rounds} interleaved rounds x {args.seconds:g}s, wrk -c{args.connections}, "
          f"body {len(BODY)} B, reply 10 tokens\n")
    # Ratios are taken per round, then the median: contenders of one round ran minutes
    # apart at most, while the machine's speed drifts between rounds.
    print("| contender | requests/s | vs bare proxy | vs bare proxy + tracing | p50 ms | p99 ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in CONTENDERS:
        rps = [r["rps"] for r in results[name]]
        p50 = statistics.median(r["p50"] for r in results[name])
        p99 = statistics.median(r["p99"] for r in results[name])
        print(f"| {name} | {statistics.median(rps):,.0f} "
              f"| {_paired(rps, results['bare proxy'])} "
              f"| {_paired(rps, results['bare proxy + tracing'])} | {p50:.2f} | {p99:.2f} |")
    ops = registry_ops()
    print(f"\nregistry register+release: {ops:,.0f} pairs/s "
          f"({1e6 / ops:.2f} µs per pair, in process)")


if __name__ == "__main__":
    main()
