"""Session-wide fixtures: one real demo run shared by the demo and the docs tests."""

from __future__ import annotations

import fcntl
import functools
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.support.extras import EXTRA_MODULES, missing_extra_module, require_extra
from tests.support.shared_tls_context import share_default_tls_context

DEMO_REQUESTS = 36

# Property tests run a bounded number of examples in the suite ("ci", the default) so
# the whole hypothesis suite stays within a minute on a shared 2-core machine;
# HYPOTHESIS_PROFILE=deep explores far more when hunting bugs. No deadline: a loaded
# machine makes single examples slow without anything being wrong.
settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("deep", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# A shell without job control starts a background job (`make test &` in a script) with
# SIGINT ignored, and every process the suite starts inherits that: the Ctrl-C tests
# then saw nothing stop, timed out and failed. The suite, and the servers and commands
# it starts, take Ctrl-C as a user at a terminal gives it. (SIGHUP under nohup is left
# ignored in the suite, so closing the terminal does not end it; the tests of a hangup
# start their child as a terminal's, tests.support.signals.hangup_as_from_a_terminal.)
share_default_tls_context()  # ~50 ms of CPU saved per httpx client the suite makes

if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# pytest-xdist's workers start servers side by side, each picking free ports: two could
# pick the same one before either server bound it, and a stack's readiness poll was then
# answered by another worker's server (a frontend sent its requests to another test's
# worker, and the spans it waited for went to another receiver). Each worker, and the
# commands it starts, picks from its own share of the range (demo.processes.free_port).
if "PYTEST_XDIST_WORKER" in os.environ:
    os.environ["RIDTRACE_PORT_SHARE"] = "{}/{}".format(
        int(os.environ["PYTEST_XDIST_WORKER"].removeprefix("gw")),
        int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")),
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"extra(*names): needs the optional extras `names` ({', '.join(EXTRA_MODULES)}); "
        "skips without it (tests/support/extras.py)")
    config.addinivalue_line(
        "markers", "dask_worker_processes: a local Dask cluster the test starts in its own "
        "process keeps Dask's worker processes (by default they are threads, tests/conftest.py)")


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker in item.iter_markers("extra"):
        for extra in marker.args:
            require_extra(extra)


@pytest.fixture(autouse=True)
def _dask_engine_in_threads(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A local Dask cluster started in the test's own process runs its workers as threads,
    unless the test is marked `dask_worker_processes`.

    Those tests ask whether the Dask engine's report is the local one's; a cluster of
    worker processes answers that as threads do, but takes seconds more to start and
    stop, and its spawned workers import ridtrace afresh: about 2 s of CPU a run, dozens
    of times a run (all but the parametrized ones used to get processes). What only
    real worker processes show (pickling, a worker dying, files the workers cannot see)
    is tested on real ones: `dask scheduler` and `dask worker` in
    tests/cli/test_dask_{worker_death,file_gone,no_workers}.py, `ridtrace analyze
    --engine dask` in a process of its own (whose cluster this does not reach), and the
    default local cluster in docs/scale-out.md's example (tests/test_docs_examples.py).
    """
    if request.node.get_closest_marker("dask_worker_processes") is not None:
        return
    if not _dask_installed():
        return
    from ridtrace.forensics.dask_engine import cluster

    monkeypatch.setitem(cluster.LOCAL_CLUSTER_OPTIONS, "processes", False)


@functools.cache
def _dask_installed() -> bool:
    return missing_extra_module("dask") is None


@pytest.fixture(autouse=True)
def _own_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test starts as CI runs it, and leaves the environment as it found it.

    Output goes to a pipe with no width set: a shell's exported COLUMNS, or pytest-xdist's
    workers (they set COLUMNS=80, LINES=24), changed how every table in the CLI tests was
    laid out; a test that wants a width sets it. And code under test that sets a variable
    itself (`ridtrace demo` sets OTEL_METRICS_EXPORTER=none for its children) left it set
    for every later test of the worker, whose servers then exported nothing.
    """
    saved = dict(os.environ)
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
    yield
    monkeypatch.undo()
    if os.environ != saved:
        os.environ.clear()
        os.environ.update(saved)


def demo_argv(out: Path, requests: int = DEMO_REQUESTS, concurrency: int | None = None) -> list[str]:
    """``ridtrace demo`` with small numbers, run by this interpreter: all `requests`
    calls at once unless `concurrency` says how many."""
    return [sys.executable, "-m", "ridtrace", "demo", "--out", str(out),
            "--requests", str(requests), "--concurrency", str(concurrency or requests)]  # fmt: skip


def _run_shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder the whole run shares: pytest-xdist gives each worker a base folder of
    its own, all under one."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def demo_completed(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """The run's one real demo, made by the first worker to need it; the others wait for
    it and read its result (its output folder is only read or copied). Made once per
    worker, it cost ~5.5 CPU-s up to three times a run, on cores the suite is short of."""
    root = _run_shared_root(tmp_path_factory)
    saved = root / "demo-completed.json"
    with (root / "demo-completed.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not saved.exists():
            # Without COLUMNS, as a pipe in CI: the demo lays itself out for its default width.
            env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
            done = subprocess.run(demo_argv(root / "demo-out"), capture_output=True, text=True,
                                  timeout=300, env=env)
            saved.write_text(json.dumps([done.args, done.returncode, done.stdout, done.stderr]))
        args, returncode, stdout, stderr = json.loads(saved.read_text())
    return subprocess.CompletedProcess(args, returncode, stdout, stderr)


@pytest.fixture(scope="session")
def demo_output(
    demo_completed: subprocess.CompletedProcess[str], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    return _run_shared_root(tmp_path_factory) / "demo-out"
