"""``--engine dask`` and ``--scheduler`` on analyze and audit, through CliRunner."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.testing.synth import SynthSpec, write_logs
from tests.support.extras import require_extra

require_extra("dask")

SAMPLE = Path(__file__).parents[1] / "forensics" / "data" / "dynamo-jsonl-sample.jsonl"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("logs")
    write_logs(out, SynthSpec(requests=200, deprecated_every=20))
    return out


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A cluster the test owns; the CLI must send its work there."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None) as c:
        yield c


def test_scheduler_is_honoured_and_reports_match(logs: Path, cluster: Any) -> None:
    code, want, _ = run("analyze", str(logs), "--format", "json")
    before = dict(cluster.scheduler.task_prefixes)
    code_d, got, err = run("analyze", str(logs), "--format", "json", "--engine", "dask",
                           "--scheduler", cluster.scheduler_address, "--partition-size", "1MiB")
    assert (code_d, json.loads(got)) == (code, json.loads(want)), err
    assert code == 1
    ran = cluster.scheduler.task_prefixes
    assert "read_blocks" in ran and "read_blocks" not in before  # the blocks were read there


def test_audit_on_dask_matches(logs: Path, cluster: Any) -> None:
    for by in ("header", "day"):
        want = run("audit", str(logs), "--by", by, "--format", "json")
        got = run("audit", str(logs), "--by", by, "--format", "json", "--engine", "dask",
                  "--scheduler", cluster.scheduler_address)
        assert got[0] == want[0] == 0
        assert json.loads(got[1]) == json.loads(want[1])


def test_audit_on_dask_reports_incomplete_input_alike(cluster: Any, tmp_path: Path) -> None:
    log = tmp_path / "app.log"  # a pino line: JSON, but no format audit reads
    log.write_text('{"level":30,"time":1764590000000,"msg":"incoming request"}\n' * 20)
    want = run("audit", str(log), "--format", "json")
    got = run("audit", str(log), "--format", "json", "--engine", "dask",
              "--scheduler", cluster.scheduler_address)
    assert got[0] == want[0] == 3
    assert json.loads(got[1]) == json.loads(want[1])
    assert json.loads(got[1])["summary"]["incomplete"] is True


def test_default_local_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    from ridtrace.forensics.dask_engine import engine as dask_engine

    # The CLI's own cluster, in threads: worker processes take ~10 s to start here.
    monkeypatch.setitem(dask_engine.LOCAL_CLUSTER_OPTIONS, "processes", False)
    code, out, err = run("analyze", str(SAMPLE), "--format", "json", "--engine", "dask")
    assert code == 1, err
    assert json.loads(out)["summary"]["unlinked"] == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scheduler", "tcp://127.0.0.1:1"], "--scheduler needs --engine dask"),
        (["--partition-size", "64MiB"], "--partition-size needs --engine dask"),
        (["--engine", "dask", "--partition-size", "lots"], "not a size"),
        # Addresses distributed refuses before connecting: a usage error, not a crash.
        (["--engine", "dask", "--scheduler", "sched"], "not a usable Dask scheduler address"),
        (["--engine", "dask", "--scheduler", "http://127.0.0.1:1"], "unknown address scheme"),
        (["--engine", "dask", "--scheduler", "tls://127.0.0.1:1"], "TLS"),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str) -> None:
    code, _, err = run("analyze", str(SAMPLE), *args)
    assert code == 2 and message in err, err


def test_bad_scheduler_address_leaves_the_process_able_to_connect(cluster: Any) -> None:
    # A client distributed refused to build used to leave its event loop behind: the
    # next client of the same process (a notebook, a test run) then failed to start.
    code, _, err = run("analyze", str(SAMPLE), "--engine", "dask", "--scheduler", "sched:")
    assert code == 2 and "not a usable Dask scheduler address" in err
    code, out, err = run("analyze", str(SAMPLE), "--format", "json", "--engine", "dask",
                         "--scheduler", cluster.scheduler_address)
    assert code == 1, err
    assert json.loads(out)["summary"]["unlinked"] == 1


def test_stdin_is_refused_on_dask(cluster: Any) -> None:
    code, _, err = run("analyze", "-", "--engine", "dask", "--scheduler",
                       cluster.scheduler_address)
    assert code == 2 and "standard input" in err


def test_a_named_pipe_is_refused_on_dask(cluster: Any, tmp_path: Path) -> None:
    # <(zcat app.jsonl.1.gz) or a fifo: the workers open files by path in their own
    # processes and cut them into blocks, which a stream cannot be; it crashed (exit 4).
    fifo = tmp_path / "frontend.pipe"
    os.mkfifo(fifo)
    writer = threading.Thread(target=_write_quietly, args=(fifo,), daemon=True)
    writer.start()
    try:
        code, _, err = run("analyze", str(fifo), "--engine", "dask", "--scheduler",
                           cluster.scheduler_address)
    finally:
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # lets the writer finish
        writer.join(timeout=10)
        os.close(reader)
    assert code == 2 and "not a regular file (a pipe, socket or device)" in err, err


def _write_quietly(fifo: Path) -> None:
    with contextlib.suppress(BrokenPipeError):  # the reader may leave before the end
        fifo.write_bytes(SAMPLE.read_bytes())


def test_missing_path_exit_2(cluster: Any, tmp_path: Path) -> None:
    code, _, err = run("audit", str(tmp_path / "nope.jsonl"), "--engine", "dask",
                       "--scheduler", cluster.scheduler_address)
    assert code == 2 and "no such file" in err


def test_missing_extra_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # As if `pip install ridtrace` without [dask]: the engine module cannot import.
    import ridtrace.forensics.dask_engine

    monkeypatch.delitem(sys.modules, "ridtrace.forensics.dask_engine.engine", raising=False)
    monkeypatch.delattr(ridtrace.forensics.dask_engine, "engine", raising=False)
    monkeypatch.setitem(sys.modules, "dask.dataframe", None)
    code, _, err = run("analyze", str(SAMPLE), "--engine", "dask")
    assert code == 2 and "pip install 'ridtrace[dask]'" in err
