"""Starting and always stopping the demo's frontend and worker processes."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from ridtrace.demo.loop_signals import stop_signals_deferred

__all__ = [
    "RefusedConfiguration", "Stack", "StackDidNotStart", "free_port", "stack_environ",
    "start_stack",
]


# Ports handed out by this process: a port is only reserved once its server binds it,
# so two servers started side by side must not be given the same one.
_handed_out: set[int] = set()
_LOWEST_PORT = 10_000


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32_768, 60_999  # Linux's default; also where macOS's range begins


def _port_share() -> tuple[int, int]:
    """``RIDTRACE_PORT_SHARE=INDEX/COUNT``: this process picks only ports whose remainder
    by COUNT is INDEX. Processes that start servers side by side (a test suite's parallel
    workers) each get their own share: a port is only reserved once its server binds it,
    so two processes could pick the same free port, and one's readiness poll was then
    answered by the other's server. Unset or malformed: the whole range."""
    index, _, count = os.environ.get("RIDTRACE_PORT_SHARE", "").partition("/")
    try:
        share, shares = int(index), int(count)
    except ValueError:
        return 0, 1
    return (share, shares) if 0 <= share < shares <= 1000 else (0, 1)


def free_port() -> int:
    """A loopback TCP port that is free now and that this process has not handed out.

    Chosen below the kernel's ephemeral range: ``bind(0)`` and every outgoing connection
    take their local port from that range, so a port found there (as ``bind(0)`` finds
    one) could be taken by a client's connection before the server bound it, and the
    server then failed with "address in use".
    """
    low, _ = _ephemeral_range()
    share, shares = _port_share()
    pick = secrets.SystemRandom()  # not `random`: a test plugin may seed it alike everywhere
    for _ in range(200):
        port = pick.randrange(_LOWEST_PORT, low) if low > _LOWEST_PORT + 1000 else 0
        if port:
            port -= (port - share) % shares  # this process's share of the range
        if port in _handed_out or (port and port < _LOWEST_PORT):
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            port = int(sock.getsockname()[1])
        if port not in _handed_out:
            _handed_out.add(port)
            return port
    where = f" in share {share} of {shares} (RIDTRACE_PORT_SHARE)" if shares > 1 else ""
    # The machine's trouble: said in one line (exit 1), not a traceback (exit 4).
    raise StackDidNotStart(f"no free loopback port below the ephemeral range{where}")


@dataclass
class Stack:
    """A running frontend with its workers."""

    frontend_url: str
    worker_urls: list[str]
    log_dir: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)


# What the demo's workers do is the demo's: `ridtrace serve worker` takes these from
# the environment when no option names them, and a shell that had set one to try a
# worker (a test fault, a gate, a first-token delay) crossed or hung the demo's streams.
# So is its frontend's access control: its callers send no API key, and with
# RIDTRACE_API_KEYS exported (docs/cli.md advises the variable for secrets) every call
# got 401 and the demo failed both runs.
_NOT_INHERITED = frozenset(
    (*(f"RIDTRACE_WORKER_{name}" for name in
       ("FIRST_TOKEN_DELAY", "GATE", "HANG_AFTER_TOKENS", "FOREIGN_CHUNK_AFTER")),
     "RIDTRACE_API_KEYS", "RIDTRACE_API_KEY", "RIDTRACE_FRONTEND_METRICS_REQUIRE_KEY",
     # The headers its callers send the client's id in and read the server's id from:
     # renamed, no call matched its finding and the demo failed both runs.
     "RIDTRACE_RESPONSE_ID_HEADER", "RIDTRACE_CLIENT_ID_HEADER")
)


def stack_environ() -> dict[str, str]:
    """The environment the stack's processes start with: this one's, less the above."""
    return {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}


def _spawn(
    argv: Sequence[str], stderr_path: Path, env: dict[str, str] | None
) -> subprocess.Popen[bytes]:
    inherited = stack_environ()
    with stderr_path.open("wb") as stderr:
        # Own process group: Ctrl-C in the terminal reaches the demo, which then stops
        # each group itself, so no child is left behind whichever way the demo ends.
        return subprocess.Popen(
            [sys.executable, "-m", "ridtrace", *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
            env={**inherited, **(env or {})},
        )


def _start(
    processes: list[subprocess.Popen[bytes]], argv: Sequence[str], stderr_path: Path,
    env: dict[str, str] | None,
) -> None:
    """Spawn a process of the stack into `processes`, which `stop` stops.

    A stop signal that came while ``Popen`` waited for the child's exec raised there,
    before the child was listed: it went on serving after the demo said every process
    it started had been stopped. Every one waits until the child is listed (a spawn
    takes milliseconds; a second Ctrl-C within them left the child running too).
    """
    with stop_signals_deferred(all_of_them=True):
        processes.append(_spawn(argv, stderr_path, env))


class StackDidNotStart(Exception):
    """A process of the stack exited while starting, or never answered its health check
    (a loopback the machine does not serve, a port taken meanwhile): the message says
    which, and where its stderr is."""


class RefusedConfiguration(Exception):
    """A process of the stack would not start with the configuration it was given (its
    exit 2): a ``RIDTRACE_*`` variable of the shell it refused, say. The message is the
    line it printed, naming the variable."""


def _refusal(stderr_path: Path) -> str:
    lines = stderr_path.read_text(errors="replace").splitlines() if stderr_path.exists() else []
    said = next((line for line in reversed(lines) if line.strip()), "")
    return said.removeprefix("Error: ") or f"see {stderr_path}"


def _wait_ready(
    client: httpx.Client,
    url: str,
    process: subprocess.Popen[bytes],
    stderr_path: Path,
    timeout: float = 30.0,
) -> None:
    """Poll ``url``'s /health until it answers 200.

    Through one ``client`` for every poll: ``httpx.get`` builds a client, and with it
    an SSL context that loads the system's CA certificates (~0.2 CPU-s), at each poll;
    the ~25 polls of a stack starting took ~5 CPU-s from its processes' own start.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            if process.returncode == 2:
                # `ridtrace serve`'s bad usage: a variable the demo's shell holds
                # (RIDTRACE_ID_GENERATOR=bogus) ended the demo in a traceback and
                # "internal error (exit 4)", though serve had named the variable.
                raise RefusedConfiguration(f"{stderr_path.stem}: {_refusal(stderr_path)}")
            raise StackDidNotStart(f"{stderr_path.stem} ({url}) exited with "
                                   f"{process.returncode} while starting: {_refusal(stderr_path)}")
        try:
            if client.get(url + "/health").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise StackDidNotStart(
        f"{stderr_path.stem} ({url}) did not answer its health check within {timeout:.0f}s "
        f"(its stderr: {stderr_path}; is 127.0.0.1 served on this machine?)")


# Seconds a served process may take to stop besides flushing its telemetry: the demo's
# traffic is over by then, so the drain has little left to wait for.
_STOP_GRACE = 5.0


def stop_grace(env: Mapping[str, str]) -> float:
    """How long processes run with ``env`` may take to stop before they are killed.

    Each flushes its spans and metrics at a stop for up to its exporter's timeout and a
    margin (``OTEL_EXPORTER_OTLP_TIMEOUT``, 10 s by default; tracing.md, Nothing lost
    at shutdown), after waiting for the requests still ending. Killed 5 s after
    SIGTERM, a stack exporting to a collector that answered in 6 s lost every span and
    final metric it still held.
    """
    from ridtrace.tracing import lifecycle
    from ridtrace.tracing.otlp import otlp_timeout

    try:
        timeout = max(otlp_timeout(env, signal_name) for signal_name in ("traces", "metrics"))
    except ValueError:  # the processes refuse it and exit at once
        timeout = 0.0
    return _STOP_GRACE + lifecycle.SPAN_WAIT_SECONDS + lifecycle.flush_limit(timeout)


def stop(processes: Sequence[subprocess.Popen[bytes]], *, grace: float = _STOP_GRACE) -> None:
    """SIGTERM every process group, then SIGKILL whatever is still there after
    ``grace`` seconds."""
    for process in processes:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    try:
        for process in processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _kill(process)
    except KeyboardInterrupt:
        # A second Ctrl-C while they flush: stop at once. Left to their SIGTERM, they ran
        # on for seconds after the demo said every process it started had been stopped.
        for process in processes:
            _kill(process)
        raise


def _kill(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL `process`'s group and wait for it (a moment: it cannot linger)."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    process.wait()


@contextlib.contextmanager
def start_stack(
    log_dir: Path,
    *,
    id_policy: str,
    workers: int = 2,
    token_delay: float = 0.005,
    env: dict[str, str] | None = None,
) -> Iterator[Stack]:
    """Start ``workers`` echo workers and a frontend in front of them; stop all on exit."""
    log_dir.mkdir(parents=True, exist_ok=True)
    # The processes' own stderr beside the logs, not among them: every command run on
    # the logs named each .stderr file as ignored.
    stderr_dir = log_dir.parent / "stderr"
    stderr_dir.mkdir(exist_ok=True)
    processes: list[subprocess.Popen[bytes]] = []
    stderr_paths: list[Path] = []
    try:
        worker_urls = []
        for _ in range(workers):
            port = free_port()
            url = f"http://127.0.0.1:{port}"
            _start(
                processes,
                [
                    "serve", "worker", "--port", str(port),
                    "--log-file", str(log_dir / f"worker-{port}.jsonl"),
                    "--token-delay", str(token_delay), "--id-policy", id_policy,
                ],
                stderr_dir / f"worker-{port}.stderr",
                env,
            )
            stderr_paths.append(stderr_dir / f"worker-{port}.stderr")
            worker_urls.append(url)
        port = free_port()
        frontend_url = f"http://127.0.0.1:{port}"
        # The demo reads the registry size from /debug/inflight, which is off by default.
        argv = ["serve", "frontend", "--port", str(port), "--id-policy", id_policy,
                "--debug-endpoints"]
        argv += ["--log-file", str(log_dir / "frontend.jsonl")]
        for url in worker_urls:
            argv += ["--worker", url]
        _start(processes, argv, stderr_dir / "frontend.stderr", env)
        stderr_paths.append(stderr_dir / "frontend.stderr")
        # Not through the environment's proxy (HTTP_PROXY on a corporate host or a CI
        # runner): every health check of the stack's own loopback servers went to it,
        # and the demo ended in a traceback after 30 s.
        with httpx.Client(timeout=1.0, trust_env=False) as client:
            for url, process, stderr_path in zip(
                [*worker_urls, frontend_url], processes, stderr_paths, strict=True
            ):
                _wait_ready(client, url, process, stderr_path)
        yield Stack(frontend_url, worker_urls, log_dir, processes)
    finally:
        stop(processes, grace=stop_grace({**os.environ, **(env or {})}))
