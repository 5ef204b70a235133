"""The demo's stack is the demo's: worker settings from the caller's environment stay out."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from ridtrace.demo.processes import start_stack
from tests.support.otlp_receiver import otlp_receiver


@pytest.mark.parametrize("variable", [
    ("RIDTRACE_WORKER_FOREIGN_CHUNK_AFTER", "1"),
    ("RIDTRACE_WORKER_HANG_AFTER_TOKENS", "1"),
])
def test_worker_fault_variables_of_the_shell_do_not_reach_the_demos_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: tuple[str, str],
) -> None:
    # `ridtrace serve worker` reads its test faults and delays from RIDTRACE_WORKER_*
    # when no option is given; the demo gives none, so a shell that had set one to try a
    # worker turned the demo's safe run into crossed or hung streams.
    monkeypatch.setenv(*variable)
    with start_stack(tmp_path / "logs", id_policy="safe", workers=1) as stack:
        answer = httpx.post(stack.frontend_url + "/v1/completions", timeout=20, json={
            "model": "echo", "prompt": "one two three four", "max_tokens": 4})
    assert answer.status_code == 200, answer.text
    choice = answer.json()["choices"][0]
    assert choice["text"].startswith("echo: one two") and choice["finish_reason"] == "length"


def test_the_stack_stops_after_its_processes_flushed_to_a_slow_collector(
    tmp_path: Path,
) -> None:
    # A served process flushes its spans and metrics at a stop for up to its exporter's
    # timeout and a second (11 s by default): the demo SIGKILLed its frontend and
    # workers 5 s after SIGTERM, so a collector answering in 6 s (under load, far
    # away) lost every span and final metric the stack still held.
    with otlp_receiver(delay=6.0) as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
               "OTEL_BSP_SCHEDULE_DELAY": "120000", "OTEL_METRIC_EXPORT_INTERVAL": "120000"}
        with start_stack(tmp_path / "logs", id_policy="safe", workers=1, env=env) as stack:
            answer = httpx.post(stack.frontend_url + "/v1/completions", timeout=20,
                                headers={"x-request-id": "slow-collector"},
                                json={"model": "echo", "prompt": "one two", "max_tokens": 2})
            assert answer.status_code == 200, answer.text
        # Each process ended on its own once its last export was answered.
        assert [process.returncode for process in stack.processes] == [0, 0]
        spans = receiver.wait_until(lambda spans: sum(
            s.attributes.get("x_request_id") == "slow-collector" for s in spans) >= 2)
        assert {s.service_name.split("-")[0] for s in spans
                if s.attributes.get("x_request_id") == "slow-collector"} == {"frontend", "worker"}


def test_a_second_stop_while_the_stack_flushes_kills_it_before_the_demo_says_so() -> None:
    # The first Ctrl-C sent SIGTERM and waited out the flush; a second one cut the wait
    # short and the demo said every process it started had been stopped while they ran
    # on for seconds. A stack process that takes its time stands in (SIGTERM ignored).
    import signal as signals
    import subprocess
    import sys

    from ridtrace.demo.processes import stop

    slow = subprocess.Popen(
        [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
         "signal.SIG_IGN); print('ready', flush=True); time.sleep(120)"],
        stdout=subprocess.PIPE, start_new_session=True)
    assert slow.stdout is not None and slow.stdout.readline() == b"ready\n"

    def second_ctrl_c(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signals.signal(signals.SIGALRM, second_ctrl_c)
    try:
        signals.setitimer(signals.ITIMER_REAL, 0.3)
        with pytest.raises(KeyboardInterrupt):
            stop([slow], grace=60)
        assert slow.poll() is not None  # gone before the demo says so
    finally:
        signals.setitimer(signals.ITIMER_REAL, 0)
        signals.signal(signals.SIGALRM, previous)
        if slow.poll() is None:
            slow.kill()
            slow.wait()


def test_the_stack_and_its_callers_are_reached_past_the_shells_proxy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # With HTTP_PROXY set (a corporate host, a CI runner), every health check of the
    # stack's own loopback servers went to the proxy: 30 s, then a traceback and exit 4.
    from ridtrace.demo.plan import is_own_output, make_plan
    from ridtrace.demo.run import _inflight
    from ridtrace.demo.traffic import send_traffic
    from tests.support.servers import free_port

    dead_proxy = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, dead_proxy)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    plan = make_plan(12, disconnect_share=0.0)
    with start_stack(tmp_path / "logs", id_policy="safe", workers=1) as stack:
        results = send_traffic(stack.frontend_url, plan, concurrency=4)
        left = _inflight(stack.frontend_url)  # "?" in the report, and the check skipped
    assert [r.status for r in results] == [200] * len(plan), [r.error for r in results]
    assert all(is_own_output(r) for r in results)
    assert left == 0


def test_the_in_flight_check_is_not_sent_to_a_socks_proxy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # httpx cannot use a SOCKS proxy without an extra: the demo's check of the registry
    # ended in an ImportError traceback and "internal error" (exit 4).
    from ridtrace.demo.run import _inflight

    monkeypatch.setenv("ALL_PROXY", "socks5://127.0.0.1:9")
    with start_stack(tmp_path / "logs", id_policy="safe", workers=1) as stack:
        assert _inflight(stack.frontend_url) == 0


def test_a_stack_process_that_exits_while_starting_is_named_not_a_traceback(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys

    from ridtrace.demo.processes import StackDidNotStart, _wait_ready
    from tests.support.servers import free_port

    stderr = tmp_path / "worker-1.stderr"
    stderr.write_text("OSError: [Errno 98] address already in use\n")
    gone = subprocess.Popen([sys.executable, "-c", "raise SystemExit(1)"])
    gone.wait()
    url = f"http://127.0.0.1:{free_port()}"
    with httpx.Client(trust_env=False) as client, pytest.raises(StackDidNotStart) as failed:
        _wait_ready(client, url, gone, stderr)
    assert str(failed.value) == (
        f"worker-1 ({url}) exited with 1 while starting: "
        "OSError: [Errno 98] address already in use")


def test_a_stop_signal_while_a_server_is_spawned_leaves_no_server_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C while Popen waited for the child's exec raised there, before the child was
    # listed for `stop`: a worker went on serving, in a session of its own, after the
    # demo said every process it started had been stopped (a double Ctrl-C too).
    import signal
    import subprocess

    import ridtrace.demo.processes as processes

    spawned: list[subprocess.Popen[bytes]] = []
    real = subprocess.Popen

    def popen(*args: object, **kwargs: object) -> subprocess.Popen[bytes]:
        child: subprocess.Popen[bytes] = real(*args, **kwargs)  # type: ignore[call-overload]
        spawned.append(child)
        signal.raise_signal(signal.SIGINT)  # as the signal that lands inside Popen,
        signal.raise_signal(signal.SIGINT)  # and a second Ctrl-C right after it
        return child

    monkeypatch.setattr(processes.subprocess, "Popen", popen)
    try:
        with pytest.raises(KeyboardInterrupt), \
                start_stack(tmp_path / "logs", id_policy="safe", workers=2):
            pass
    finally:
        for child in spawned:  # nothing left running, whatever the test found
            if child.poll() is None:
                child.kill()
                child.wait()
                raise AssertionError(f"process {child.pid} was left running")
    assert len(spawned) == 1  # the stop came before the next one was started
