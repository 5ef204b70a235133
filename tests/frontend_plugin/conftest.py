"""Real frontend and worker processes on loopback, started in parallel."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import anthropic
import httpx
import openai
import orjson
import pytest
from click.testing import CliRunner, Result

import ridtrace.cli.serve as serve_command
from ridtrace.cli.main import main
from tests.support.servers import free_port, stop_process, wait_until_serving


@dataclass
class Proc:
    """One `ridtrace serve ...` subprocess."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path
    stderr: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def lines(self) -> list[dict[str, object]]:
        """The JSON log lines written in full so far (a line still being written, with
        no newline yet, is left for the next look)."""
        if not self.log.exists():
            return []
        whole = self.log.read_bytes().rpartition(b"\n")[0]
        return [orjson.loads(x) for x in whole.splitlines() if x.strip()]

    def wait_for_lines(
        self, predicate: Callable[[dict[str, object]], bool], count: int, *,
        timeout: float = 30.0,
    ) -> list[dict[str, object]]:
        """Poll the log until at least ``count`` lines satisfy ``predicate``; return them.

        The sink writes an event's line at the next turn of the server's event loop, so
        a response can reach the caller before the line its handler logged (a condition
        with a deadline, not a nap)."""
        deadline = time.monotonic() + timeout
        while True:
            found = [line for line in self.lines() if predicate(line)]
            if len(found) >= count:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(found)} of {count} wanted lines in {self.log}")
            time.sleep(0.02)

    def wait_for_event(
        self, request_id: str, event: str, *, timeout: float = 30.0
    ) -> dict[str, object]:
        """Poll the log until the ``event`` line of ``request_id`` is written."""
        return self.wait_for_lines(
            lambda line: line.get("request_id") == request_id and line.get("event") == event,
            1, timeout=timeout)[0]


@dataclass
class Stack:
    """A frontend and its workers."""

    frontend: Proc
    workers: list[Proc] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.frontend.url

    def inflight(self) -> dict[str, object]:
        return dict(httpx.get(self.url + "/debug/inflight", timeout=5).json())

    def open_gates(self) -> None:
        for worker in self.workers:
            httpx.post(worker.url + "/debug/gate/open", timeout=5).raise_for_status()

    def wait_inflight(self, predicate: object, *, timeout: float = 30.0) -> dict[str, object]:
        """Poll the debug endpoint until ``predicate(snapshot)`` holds (a condition, not a nap)."""
        deadline = time.monotonic() + timeout
        snap = self.inflight()
        while not predicate(snap):  # type: ignore[operator]
            if time.monotonic() > deadline:
                raise AssertionError(f"condition not reached: {snap}")
            time.sleep(0.02)
            snap = self.inflight()
        return snap


def _spawn(
    args: list[str], workdir: Path, name: str, env: dict[str, str] | None = None,
    *, port: int | None = None, preexec_fn: Callable[[], None] | None = None,
) -> Proc:
    port = port or free_port()
    log = workdir / f"{name}.jsonl"
    stderr = workdir / f"{name}.stderr"
    with stderr.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "ridtrace", "serve", *args, "--port", str(port),
             "--log-file", str(log)],
            stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
            env={**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": "", **(env or {})},
            preexec_fn=preexec_fn,
        )
    return Proc(process, port, log, stderr)


@contextlib.contextmanager
def start_stack(
    workdir: Path,
    *,
    workers: list[list[str]],
    frontend: list[str] | None = None,
    env: dict[str, str] | None = None,
    debug_endpoints: bool = True,
    worker_userinfo: str | None = None,
    worker_env: dict[str, str] | None = None,
    frontend_preexec_fn: Callable[[], None] | None = None,
    worker_host: str = "127.0.0.1",
) -> Iterator[Stack]:
    """Start workers (each with its own extra flags) and a frontend, all in parallel.

    ``env`` is every process's; ``worker_env``, when given, the workers' instead.

    The frontend serves ``/debug/inflight`` (off by default in ``ridtrace serve``) unless
    ``debug_endpoints`` is false: these tests poll it for their conditions. With
    ``worker_userinfo`` (``user:password``) the frontend gets the worker URLs with it.
    ``frontend_preexec_fn`` runs in the frontend's child before it starts (to lower a
    resource limit, say). ``worker_host`` is how the frontend names its workers
    (``localhost``: looked up by name).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    procs: list[Proc] = []
    try:
        for_workers = env if worker_env is None else worker_env
        ws = [
            _spawn(["worker", *flags], workdir, f"worker{i}", for_workers)
            for i, flags in enumerate(workers)
        ]
        procs.extend(ws)
        prefix = f"http://{worker_userinfo}@" if worker_userinfo else "http://"
        worker_args = [a for w in ws for a in (
            "--worker", w.url.replace("http://", prefix).replace("127.0.0.1", worker_host))]
        debug = ["--debug-endpoints"] if debug_endpoints else []
        fe = _spawn(["frontend", *worker_args, *debug, *(frontend or [])], workdir, "frontend", env,
                    preexec_fn=frontend_preexec_fn)
        procs.append(fe)
        for proc in procs:
            try:
                wait_until_serving(proc.url, proc.process, timeout=60, path="/health")
            except Exception as exc:
                raise RuntimeError(f"{proc.stderr.read_text()}") from exc
        yield Stack(fe, ws)
    finally:
        for proc in procs:
            stop_process(proc.process, grace=5)


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A general-purpose safe stack: two workers with a small token delay."""
    workdir = tmp_path_factory.mktemp("stack")
    with start_stack(
        workdir, workers=[["--token-delay", "0.005"], ["--token-delay", "0.005"]],
        frontend=["--chunk-timeout", "10"],
    ) as running:
        yield running


@pytest.fixture
def oai(stack: Stack) -> openai.OpenAI:
    """The official OpenAI SDK, pointed at the shared stack's frontend."""
    return openai.OpenAI(base_url=stack.url + "/v1", api_key="unused", max_retries=0)


@pytest.fixture
def claude(stack: Stack) -> anthropic.Anthropic:
    """The official Anthropic SDK, pointed at the shared stack's frontend."""
    return anthropic.Anthropic(base_url=stack.url, api_key="unused", max_retries=0)


# Exports held back until the frontend stops: what reaches the receiver is what its
# SIGTERM flushed.
EXPORT_AT_EXIT = {"OTEL_BSP_SCHEDULE_DELAY": "120000", "OTEL_METRIC_EXPORT_INTERVAL": "120000"}


@contextlib.contextmanager
def exporting_frontend(workdir: Path, endpoint: str) -> Iterator[Proc]:
    """A serving frontend (no worker behind it) exporting to the OTLP `endpoint` at exit;
    stopped by SIGTERM when the block ends, so its spans and metrics are flushed."""
    frontend = _spawn(["frontend", "--worker", f"http://127.0.0.1:{free_port()}"], workdir,
                      "frontend", {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, **EXPORT_AT_EXIT})
    try:
        wait_until_serving(frontend.url, frontend.process, timeout=60, path="/health")
        yield frontend
    finally:
        stop_process(frontend.process)


class ServeStarted(Exception):
    """The command got past its checks: it would set up its log and serve now."""


class ServeCli(Protocol):
    """`serve_cli`'s runner: ``run(side, *argv, env=...)``."""

    def __call__(self, side: str, *argv: str,
                 env: dict[str, str | None] | None = None) -> Result: ...


@pytest.fixture
def serve_cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ServeCli:
    """`ridtrace serve SIDE ARGV` in-process with `env` over the environment (None
    unsets a variable); a command past its checks stops with `ServeStarted` (exit 1) where
    it would set up its log and serve, so a setting wrongly let through fails the test
    rather than serving in the test's process."""

    def started(*args: object) -> None:
        raise ServeStarted

    monkeypatch.setattr(serve_command, "setup_telemetry", started)

    def run(side: str, *argv: str, env: dict[str, str | None] | None = None) -> Result:
        where = ["--worker", "http://127.0.0.1:9"] if side == "frontend" and not any(
            a == "--worker" for a in argv) else []
        return CliRunner().invoke(main, [
            "serve", side, "--port", "1", *where, "--log-file",
            str(tmp_path / f"{side}.jsonl"), *argv], env=env)

    return run


def refused(result: Result) -> str:
    """The stderr of a run refused as bad usage (exit 2, not a crash)."""
    assert result.exit_code == 2 and not isinstance(result.exception, ServeStarted), (
        result.exit_code, result.exception, result.output)
    return result.stderr
