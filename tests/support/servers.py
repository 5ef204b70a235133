"""Real servers for end-to-end tests: subprocesses on free loopback ports."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from ridtrace.demo.processes import free_port

__all__ = [
    "RunningServer", "child_pythonpath", "free_port", "run_server", "wait_until_serving",
]

_REPO_ROOT = Path(__file__).resolve().parents[2]


def child_pythonpath() -> str:
    """PYTHONPATH for a child interpreter: this checkout's ``src`` (then its root, for
    ``tests.*``). The root alone let the child import whatever ridtrace the venv has
    installed, so in a second clone the servers under test ran another tree's code."""
    return f"{_REPO_ROOT / 'src'}{os.pathsep}{_REPO_ROOT}"


@dataclass
class RunningServer:
    """A server subprocess and where it listens."""

    process: subprocess.Popen[bytes]
    port: int
    stderr_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stderr_text(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""


def wait_until_serving(
    url: str, process: subprocess.Popen[bytes], *, timeout: float = 30.0, path: str = "/"
) -> None:
    """Poll ``url + path`` until any HTTP answer arrives; fail fast if the process died.

    One client for every poll: ``httpx.get`` loads the CA bundle into a new SSL context
    at each call (~0.2 CPU-s), which made waiting cost more CPU than the server's start.
    """
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=1.0) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"server exited with {process.returncode} before serving")
            try:
                client.get(url + path)
                return
            except httpx.TransportError:
                time.sleep(0.05)
    raise TimeoutError(f"{url} did not answer within {timeout}s")


@contextlib.contextmanager
def run_server(
    argv: Sequence[str],
    *,
    port: int,
    workdir: Path,
    env: dict[str, str] | None = None,
    ready_path: str = "/",
    timeout: float = 30.0,
) -> Iterator[RunningServer]:
    """Start ``argv`` (which must listen on ``port``), wait for it, stop it afterwards.

    ``argv`` may start with ``-m`` or a script; it is run with this interpreter.
    """
    stderr_path = workdir / f"server-{port}.stderr"
    full_env = {**os.environ, **(env or {})}
    with stderr_path.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, *argv],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=full_env,
            start_new_session=True,
        )
    server = RunningServer(process=process, port=port, stderr_path=stderr_path)
    try:
        wait_until_serving(server.url, process, timeout=timeout, path=ready_path)
        yield server
    finally:
        stop_process(process)


def stop_process(process: subprocess.Popen[bytes], *, grace: float = 10.0) -> None:
    """SIGTERM the process group, then SIGKILL it if it lingers."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=grace)
