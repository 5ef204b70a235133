"""``--scheduler`` at an address where something answers, but not a Dask scheduler.

distributed bounds a client's TCP connect by its timeout, not the handshake after it: a
server that accepts the connection and never answers as a scheduler does kept the
command waiting forever. The servers here are real processes on loopback ports.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ridtrace.testing.synth import SynthSpec, write_logs
from tests.support.extras import require_extra
from tests.support.servers import free_port, stop_process

require_extra("dask")

# A bound on the command only: without the fix it never ended, so this fails it.
HANG = 120
# Dask's own setting for the wait, shorter than ridtrace's 10 s default, as a user sets it.
CONNECT = {"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"}


def _analyze_on(address: str, tmp_path: Path,
                env: dict[str, str] = CONNECT) -> subprocess.CompletedProcess[str]:
    write_logs(tmp_path / "logs", SynthSpec(requests=20))
    return subprocess.run(
        [sys.executable, "-m", "ridtrace", "analyze", str(tmp_path / "logs"), "--format", "json",
         "--engine", "dask", "--scheduler", address],
        capture_output=True, text=True, timeout=HANG, env={**os.environ, **env},
    )


@pytest.fixture
def dashboard_port(tmp_path: Path) -> Iterator[int]:
    """A `dask scheduler` whose dashboard (HTTP) listens on the port returned."""
    port = free_port()
    scheduler = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
         "--port", str(free_port()), "--dashboard-address", f"127.0.0.1:{port}"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    try:
        _wait_listening(port, scheduler)
        yield port
    finally:
        stop_process(scheduler)


def _wait_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    import time

    deadline = time.monotonic() + 60
    while True:
        assert process.poll() is None, "the scheduler exited"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, "the dashboard did not listen"
            time.sleep(0.1)


def test_the_dashboard_port_is_an_error_not_a_hang(dashboard_port: int, tmp_path: Path) -> None:
    # The port the browser shows (8787) instead of the scheduler's (8786).
    done = _analyze_on(f"tcp://127.0.0.1:{dashboard_port}", tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert "cannot reach the Dask scheduler" in done.stderr, done.stderr
    assert "answered" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert "within 2s" in done.stderr, done.stderr  # Dask's setting, not ridtrace's 10 s


@pytest.mark.parametrize("greeting", [b"", b"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n"],
                         ids=["silent", "greets-first"])
def test_a_listener_that_never_answers_is_an_error_not_a_hang(
    tmp_path: Path, greeting: bytes,
) -> None:
    # A tunnel or port-forward with nothing behind it: the connection is accepted, and
    # no byte ever comes back. Or a service that speaks first (sshd on :22): its banner
    # read as a message's length asked numpy for 2.8 EiB, a traceback and exit 4.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except TimeoutError:
                continue
            accepted[-1].sendall(greeting)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        done = _analyze_on(f"tcp://127.0.0.1:{listener.getsockname()[1]}", tmp_path)
    finally:
        stop.set()
        thread.join(10)
        for conn in accepted:
            conn.close()
        listener.close()
    assert done.returncode == 2, done.stderr
    assert "cannot reach the Dask scheduler" in done.stderr and "answered" in done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert accepted  # it did reach the listener: the wait was on the handshake


def test_a_connect_timeout_dask_cannot_use_is_said_before_any_wait(tmp_path: Path) -> None:
    done = _analyze_on("tcp://127.0.0.1:9", tmp_path,
                       {"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "soon"})
    assert done.returncode == 2, done.stderr
    assert "distributed.comm.timeouts.connect is 'soon'" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr


def test_the_wait_is_ten_seconds_unless_dask_is_told_otherwise() -> None:
    import dask

    from ridtrace.forensics.dask_engine.cluster import DaskEngineError, connect_timeout

    assert connect_timeout() == 10.0
    with dask.config.set({"distributed.comm.timeouts.connect": "2.5s"}):
        assert connect_timeout() == 2.5
    for unusable in ("0s", "-1s", "1 fortnight"):
        with dask.config.set({"distributed.comm.timeouts.connect": unusable}), \
                pytest.raises(DaskEngineError, match="expected a time above zero"):
            connect_timeout()


def test_a_scheme_distributed_removed_is_bad_usage_in_one_line(tmp_path: Path) -> None:
    # ucx:// warned, then raised a FutureWarning: a traceback and "internal error (exit 4)".
    done = _analyze_on("ucx://127.0.0.1:28786", tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "FutureWarning" not in done.stderr
    (said,) = [line for line in done.stderr.splitlines() if line.strip()]
    assert "not a usable Dask scheduler address 'ucx://127.0.0.1:28786'" in said


@pytest.mark.parametrize("port", ["99999", "0"])
def test_a_port_no_tcp_port_is_refused_at_once(tmp_path: Path, port: str) -> None:
    # It waited the 10 s connect timeout, then said no scheduler answered there, "the
    # dashboard's port?"
    done = _analyze_on(f"tcp://127.0.0.1:{port}", tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"port {port} is no TCP port (1 to 65535)" in done.stderr


def test_a_workers_or_nannys_port_is_named_as_such(tmp_path: Path) -> None:
    # Both speak Dask: the client's own handshake then failed on its call's arguments,
    # "not a usable Dask scheduler address … Worker.identity() got an unexpected keyword
    # argument", with distributed's dangling-stream WARNING beside it.
    scheduler_port, worker_port, nanny_port = free_port(), free_port(), free_port()
    quiet = {"cwd": tmp_path, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL,
             "start_new_session": True}
    scheduler = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
         "--port", str(scheduler_port), "--no-dashboard"], **quiet)  # type: ignore[call-overload]
    worker = None
    try:
        _wait_listening(scheduler_port, scheduler)
        worker = subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker",
             f"tcp://127.0.0.1:{scheduler_port}", "--host", "127.0.0.1", "--nworkers", "1",
             "--worker-port", str(worker_port), "--nanny-port", str(nanny_port),
             "--no-dashboard"], **quiet)  # type: ignore[call-overload]
        _wait_listening(worker_port, worker)
        for port, kind in ((worker_port, "Worker"), (nanny_port, "Nanny")):
            done = _analyze_on(f"tcp://127.0.0.1:{port}", tmp_path / kind)
            assert done.returncode == 2, done.stderr
            assert f"a Dask {kind} answered there, not a scheduler" in done.stderr, done.stderr
            assert "Traceback" not in done.stderr and "WARNING" not in done.stderr, done.stderr
    finally:
        if worker is not None:
            stop_process(worker)
        stop_process(scheduler)
