"""``--engine dask`` on a local log whose name holds ``::``.

fsspec reads ``::`` in a URL as a chain of filesystems: the engine opened
``logs/front::end.jsonl`` as ``logs/front``, so another log was read under its name
(wrong findings, wrong ``file:line``, a false "truncated while being read"), or, with no
``logs/front``, the run crashed (exit 4). Only a file split into blocks was opened so; a
smaller one is read as the local engine reads it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.testing.synth import SynthSpec, write_logs


def _report(*args: str) -> tuple[int, dict[str, object]]:
    done = CliRunner().invoke(main, ["analyze", *args, "--format", "json", "-q"])
    return done.exit_code, json.loads(done.stdout)


@pytest.mark.extra("dask")
@pytest.mark.parametrize("beside", [True, False])
def test_a_log_named_with_two_colons_is_read_as_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, beside: bool
) -> None:
    from ridtrace.forensics.dask_engine import cluster

    monkeypatch.setitem(cluster.LOCAL_CLUSTER_OPTIONS, "processes", False)
    made = write_logs(tmp_path / "made", SynthSpec(requests=1500, seed=5))
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "front::end.jsonl"
    log.write_bytes(made.files[0].read_bytes())  # the frontend's log, ~3 MB
    assert log.stat().st_size > 2 << 20
    if beside:  # what fsspec opened in its place
        (logs / "front").write_bytes(made.files[1].read_bytes())
    want = _report(str(log))
    got = _report(str(log), "--engine", "dask", "--partition-size", "1MiB")
    assert got == want
    assert want[0] == 1  # the synthetic incident's findings
