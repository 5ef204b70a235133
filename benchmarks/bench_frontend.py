"""CPU per request of the frontend and the worker against minimal aiohttp anchors (issue 15).

Requests/s says little here: the shared echo worker bounds every proxy's throughput.
What a proxy costs is the CPU time its own process burns per request, read from
``/proc/PID/stat`` (utime + stime) before and after each load phase.

Contenders (each its own process; proxies pinned to CPU 0, workers and ``wrk`` to CPU 1
when ``taskset`` exists):

* ``minimal proxy``: an aiohttp server + aiohttp client, about 50 lines. For
  ``POST /v1/completions`` it mints an id, forwards the work envelope to the worker,
  relays the NDJSON chunks (checking each chunk's ``request_id``) and answers a
  completions body, or SSE chunks when ``stream`` is true. The anchor of issue 15.
* ``frontend``: ``ridtrace serve frontend`` as a user runs it (JSON-lines log file,
  tracing configured, lifecycle lines on).
* ``worker alone``: ``POST /v1/work`` straight to ``ridtrace serve worker``.
* ``minimal worker``: an aiohttp echo worker streaming the same NDJSON lines.
* ``frontend, no telemetry`` / ``worker, no telemetry``: ridtrace's apps on the same
  server with no log sink, no tracer provider and no lifecycle lines: the path without
  the telemetry the log contract asks for.

Phases: ``short`` (10-token reply, non-streaming; CPU per request) and ``stream``
(1,000-token SSE stream; CPU per streamed token). Rounds interleave every contender of
a phase, order rotated; the tables report medians, min…max across rounds, and ratios
taken per round. The same event loop runs every contender (uvloop when uvicorn uses it).

Usage: ``.venv/bin/python benchmarks/bench_frontend.py [--rounds 5] [--seconds 3] [--phases short,stream,work]``
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from ridtrace.demo.processes import free_port

SHORT_WORDS = 9  # + "echo:" = a 10-token reply
STREAM_TOKENS = 1000
TICK = os.sysconf("SC_CLK_TCK")


def _completion_body(words: int, *, stream: bool) -> str:
    prompt = " ".join(["fox"] * words)
    return f'{{"prompt": "{prompt}", "max_tokens": {words + 1}, "stream": {str(stream).lower()}}}'


def _envelope(words: int) -> str:
    prompt = " ".join(["fox"] * words)
    return (f'{{"request_id": "bench-RID", "x_request_id": null, "endpoint": "completions", '
            f'"model": "echo", "prompt": "{prompt}", "max_tokens": {words + 1}}}')


def _lua(body: str, *, unique_ids: bool = False) -> str:
    # The worker refuses a request_id already in flight, so direct work envelopes get
    # a fresh id per request: a per-run nonce (wrk's argument) and a counter.
    if unique_ids:
        head, tail = body.split("bench-RID")
        return (f"wrk.method = 'POST'\nwrk.headers['Content-Type'] = 'application/json'\n"
                f"counter = 0\nnonce = ''\ninit = function(args) nonce = args[1] end\n"
                f"request = function()\n  counter = counter + 1\n"
                f"  return wrk.format(nil, nil, nil, [[{head}]] .. 'bench-' .. nonce .. '-' "
                f".. counter .. [[{tail}]])\nend\n")
    return (f"wrk.method = 'POST'\nwrk.body = [[{body}]]\n"
            f"wrk.headers['Content-Type'] = 'application/json'\n")


# --- the anchors ----------------------------------------------------------------------


def minimal_proxy(worker: str) -> Any:
    """aiohttp pass-through doing the frontend's /v1/completions job, nothing more."""
    import aiohttp
    import orjson
    from aiohttp import web

    async def completions(request: web.Request) -> web.StreamResponse:
        session: aiohttp.ClientSession = request.app["session"]
        body = orjson.loads(await request.read())
        rid = str(uuid.uuid4())
        envelope = orjson.dumps({
            "request_id": rid, "x_request_id": None, "endpoint": "completions",
            "model": "echo", "prompt": body["prompt"], "max_tokens": body["max_tokens"],
        })
        stream = bool(body.get("stream"))
        async with session.post(worker + "/v1/work", data=envelope,
                                headers={"content-type": "application/json"}) as upstream:
            out: web.StreamResponse | None = None
            parts: list[str] = []
            async for line in upstream.content:
                message = orjson.loads(line)
                if message["request_id"] != rid:
                    raise web.HTTPBadGateway(text="foreign chunk")
                text = message.get("text")
                if text is None:
                    continue  # the done line; reading on to EOF keeps the connection
                if not stream:
                    parts.append(text)
                    continue
                if out is None:
                    out = web.StreamResponse(headers={"content-type": "text/event-stream"})
                    await out.prepare(request)
                await out.write(b"data: " + orjson.dumps({
                    "id": "cmpl-" + rid, "object": "text_completion", "model": "echo",
                    "choices": [{"index": 0, "text": text, "finish_reason": None}],
                }) + b"\n\n")
        if out is not None:
            await out.write(b"data: [DONE]\n\n")
            await out.write_eof()
            return out
        return web.Response(body=orjson.dumps({
            "id": "cmpl-" + rid, "object": "text_completion", "model": "echo",
            "choices": [{"index": 0, "text": "".join(parts), "finish_reason": "stop"}],
        }), content_type="application/json")

    async def session_ctx(app: web.Application) -> Any:
        app["session"] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1024))
        yield
        await app["session"].close()

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    app.router.add_get("/health", lambda _: _ok())
    app.cleanup_ctx.append(session_ctx)
    return app


def minimal_worker() -> Any:
    """aiohttp echo worker: parse the envelope, stream one NDJSON line per token."""
    import orjson
    from aiohttp import web

    from ridtrace.frontend_plugin.engine import echo_tokens

    async def work(request: web.Request) -> web.StreamResponse:
        job = orjson.loads(await request.read())
        rid = job["request_id"]
        tokens, reason = echo_tokens(job["prompt"], job["max_tokens"])
        out = web.StreamResponse(headers={"content-type": "application/x-ndjson"})
        await out.prepare(request)
        # All tokens are ready at once (no token delay): one write, as ridtrace's worker.
        lines = [orjson.dumps({"request_id": rid, "text": token},
                              option=orjson.OPT_APPEND_NEWLINE) for token in tokens]
        lines.append(orjson.dumps({"request_id": rid, "done": True, "finish_reason": reason,
                                   "tokens": len(tokens)}, option=orjson.OPT_APPEND_NEWLINE))
        await out.write(b"".join(lines))
        await out.write_eof()
        return out

    app = web.Application()
    app.router.add_post("/v1/work", work)
    app.router.add_get("/health", lambda _: _ok())
    return app


async def _ok() -> Any:
    from aiohttp import web

    return web.json_response({"status": "ok"})


def serve_untraced(name: str, port: int, worker: str) -> None:
    """Child process: ridtrace's app with no log sink, no tracer provider, no lifecycle lines.

    The same app and server as ``ridtrace serve``; what is left is the path itself
    (routing, registry, dispatch, pump, chunk checks), so the gap to ``ridtrace serve``
    is the telemetry the log contract asks for.
    """
    from loguru import logger

    from ridtrace.cli.serve import _run
    from ridtrace.cli.serve_options import DEFAULT_GRACEFUL_TIMEOUT, DEFAULT_HEADER_TIMEOUT
    from ridtrace.frontend_plugin import (
        FrontendSettings,
        WorkerSettings,
        create_frontend_app,
        create_worker_app,
    )
    from ridtrace.frontend_plugin.drain import Drain
    from ridtrace.tracing import TracingSettings

    logger.remove()
    quiet = TracingSettings(log_lifecycle=False)
    drain = Drain()
    if name.startswith("frontend"):
        app = create_frontend_app(FrontendSettings(workers=(worker,)), tracing=quiet,
                                  drain=drain)
    else:
        app = create_worker_app(WorkerSettings(), tracing=quiet, drain=drain)
    # As `ridtrace serve` runs it (header guard, host check); no log file is written.
    _run(app, "127.0.0.1", port, drain=drain, graceful_timeout=DEFAULT_GRACEFUL_TIMEOUT,
         name=name, log_file=Path(os.devnull), header_timeout=DEFAULT_HEADER_TIMEOUT,
         allowed_hosts=())


def serve_anchor(name: str, port: int, worker: str) -> None:
    """Child process: run an aiohttp anchor on the loop uvicorn would pick."""
    if "no telemetry" in name:
        serve_untraced(name, port, worker)
        return
    from aiohttp import web

    app = minimal_proxy(worker) if name == "minimal proxy" else minimal_worker()
    loop = None
    try:
        import uvloop

        loop = uvloop.new_event_loop()
    except ImportError:
        pass
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None, loop=loop)


# --- the harness ----------------------------------------------------------------------


def _pin(cpu: int) -> list[str]:
    return ["taskset", "-c", str(cpu)] if shutil.which("taskset") else []


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


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def _response_bytes(url: str, body: str) -> int:
    """Bytes of one whole response (status line and headers included, as wrk counts)."""
    import httpx

    response = httpx.post(url, content=body, headers={"content-type": "application/json"},
                          timeout=60)
    response.raise_for_status()
    head = 17 + sum(len(k) + len(v) + 4 for k, v in response.headers.raw) + 2
    return head + len(response.content)


def _wrk(url: str, seconds: float, connections: int, script: Path, pid: int,
         per_response: int | None = None) -> dict[str, float]:
    """One load phase; CPU per request of ``pid``.

    With ``per_response`` (long streams) requests are counted as bytes read / bytes per
    response, so streams still open when the phase ends count for what they delivered.
    """
    before = _cpu_seconds(pid)
    out = subprocess.run(
        [*_pin(1), "wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s", "--timeout", "60s",
         "-s", str(script), url, "--", uuid.uuid4().hex],
        capture_output=True, text=True, check=True,
    ).stdout
    cpu = _cpu_seconds(pid) - before
    if "Non-2xx" in out or "Socket errors" in out:
        raise SystemExit(f"errors from {url}:\n{out}")
    done: float = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    if per_response:
        value, unit = re.search(r"requests in [\d.]+\w+, ([\d.]+)(\w+) read", out).groups()  # type: ignore[union-attr]
        scale = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3}[unit]
        done = float(value) * scale / per_response
    return {"requests": done, "rps": done / seconds, "cpu_ms": cpu * 1000 / max(done, 1)}


def own_work_us(tokens: int, n: int = 20_000) -> float:
    """The plugin's own work per request, in process: mint an id, register, claim,
    check ``tokens`` chunk ids, release — µs per request (median of 5 runs)."""
    import asyncio

    from ridtrace.frontend_plugin import InflightRegistry
    from ridtrace.tracing import uuid4_id

    def run() -> float:
        registry = InflightRegistry()
        channel: asyncio.Queue[object] = asyncio.Queue()
        chunk = {"request_id": "", "text": "tok"}
        start = time.perf_counter()
        for _ in range(n):
            rid = uuid4_id()
            chunk["request_id"] = rid
            registry.register(rid, channel, owner_request_id=rid)
            registry.claim(rid)
            for _ in range(tokens):
                if chunk.get("request_id") != rid:
                    raise AssertionError
            registry.release(rid, channel)
        return (time.perf_counter() - start) / n * 1e6

    return statistics.median(run() for _ in range(5))


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3g} ({min(values):.3g}…{max(values):.3g})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--stream-connections", type=int, default=4)
    parser.add_argument("--phases", default="short,stream,work",
                        help="comma-separated subset of short,stream,work")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_anchor(args.serve, args.port, args.worker)
        return
    if not shutil.which("wrk"):
        raise SystemExit("wrk is required (apt-get install wrk)")
    tmp = Path(tempfile.mkdtemp(prefix="ridtrace-bench-frontend-"))
    scripts = {
        "short": tmp / "short.lua", "stream": tmp / "stream.lua", "work": tmp / "work.lua",
    }
    scripts["short"].write_text(_lua(_completion_body(SHORT_WORDS, stream=False)))
    scripts["stream"].write_text(_lua(_completion_body(STREAM_TOKENS - 1, stream=True)))
    scripts["work"].write_text(_lua(_envelope(SHORT_WORDS), unique_ids=True))
    procs: dict[str, subprocess.Popen[bytes]] = {}
    ports: dict[str, int] = {}
    me = [sys.executable, __file__]

    def launch(name: str, argv: list[str]) -> None:
        ports[name] = free_port()
        procs[name] = _start([*argv, "--port", str(ports[name])], ports[name])

    try:
        serve_cmd = [sys.executable, "-m", "ridtrace", "serve"]
        launch("worker alone", [*_pin(1), *serve_cmd, "worker", "--log-file", str(tmp / "w.jsonl")])
        worker = f"http://127.0.0.1:{ports['worker alone']}"
        launch("minimal worker", [*_pin(1), *me, "--serve", "minimal worker", "--worker", "-"])
        launch("minimal proxy", [*_pin(0), *me, "--serve", "minimal proxy", "--worker", worker])
        launch("frontend", [*_pin(0), *serve_cmd, "frontend", "--worker", worker,
                            "--log-file", str(tmp / "fe.jsonl")])
        for name in ("frontend, no telemetry", "worker, no telemetry"):
            launch(name, [*_pin(0 if name.startswith("frontend") else 1), *me, "--serve", name,
                          "--worker", worker])
        proxies = ("minimal proxy", "frontend", "frontend, no telemetry")
        phases = {
            "short": (proxies, "/v1/completions", args.connections),
            "stream": (proxies, "/v1/completions", args.stream_connections),
            "work": (("minimal worker", "worker alone", "worker, no telemetry"), "/v1/work",
                     args.connections),
        }
        chosen = args.phases.split(",")
        phases = {phase: spec for phase, spec in phases.items() if phase in chosen}
        stream_body = _completion_body(STREAM_TOKENS - 1, stream=True)
        sizes = {name: _response_bytes(f"http://127.0.0.1:{ports[name]}/v1/completions",
                                       stream_body) for name in proxies}
        results: dict[tuple[str, str], list[dict[str, float]]] = {}
        for phase, (names, path, conns) in phases.items():  # warm-up
            for name in names:
                _wrk(f"http://127.0.0.1:{ports[name]}{path}", 1, conns, scripts[phase],
                     procs[name].pid)
        for round_no in range(args.rounds):
            for phase, (names, path, conns) in phases.items():
                shift = round_no % len(names)
                order = names[shift:] + names[:shift]
                for name in order:
                    results.setdefault((phase, name), []).append(
                        _wrk(f"http://127.0.0.1:{ports[name]}{path}", args.seconds, conns,
                             scripts[phase], procs[name].pid,
                             sizes[name] if phase == "stream" else None))
    finally:
        for proc in procs.values():
            proc.terminate()
        for proc in procs.values():
            proc.wait(10)
    print(f"{args.rounds} interleaved rounds x {args.seconds:g}s; wrk -c{args.connections} "
          f"(streams -c{args.stream_connections}); CPU of the server process from /proc\n")
    print("| phase | contender | requests/s | CPU per request, ms | CPU per token, µs "
          "| vs anchor (per round) |")
    print("|---|---|---:|---:|---:|---:|")
    anchors = {"short": "minimal proxy", "stream": "minimal proxy", "work": "minimal worker"}
    per_token = {"short": SHORT_WORDS + 1, "stream": STREAM_TOKENS, "work": SHORT_WORDS + 1}
    for phase, (names, _, _) in phases.items():
        for name in names:
            rows = results[(phase, name)]
            cpu = [r["cpu_ms"] for r in rows]
            token_us = [c * 1000 / per_token[phase] for c in cpu]
            anchor = results[(phase, anchors[phase])]
            ratios = [r["cpu_ms"] / a["cpu_ms"] for r, a in zip(rows, anchor, strict=True)]
            print(f"| {phase} | {name} | {statistics.median(r['rps'] for r in rows):,.0f} "
                  f"| {_spread(cpu)} | {_spread(token_us)} | {_spread(ratios)}× |")
    lean = {p: statistics.median(r["cpu_ms"] for r in results[(p, "minimal proxy")]) * 1000
            for p in ("short", "stream") if p in phases}
    for phase in (p for p in ("short", "stream") if p in phases):
        own = own_work_us(per_token[phase])
        print(f"\nplugin's own work ({phase}: id, registry, {per_token[phase]} chunk checks): "
              f"{own:.1f} µs per request, {own / lean[phase]:.2%} of the minimal proxy's CPU")


if __name__ == "__main__":
    main()
