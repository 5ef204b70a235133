"""A URL among the PATHs of the pandas engine: said to be one, with where URLs are read.

docs/scale-out.md names `s3://…` and `file://…` as PATHs of `--engine dask`. Given to
the default engine (the flag forgotten, or to `trace` / `export jaeger`, which have no
Dask engine), such a PATH was "no such file or directory: s3://acme-logs/x/", which
sent users looking for a typo in a bucket name that was right.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main


@pytest.mark.parametrize("command", [
    ["analyze"], ["audit"], ["trace", "some-id"], ["export", "jaeger", "-o", "traces.json"],
])
@pytest.mark.parametrize("url", ["s3://acme-logs/inference/", "file:///var/log/ridtrace/"])
def test_a_url_to_the_pandas_engine_says_where_urls_are_read(
    command: list[str], url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, [*command, url, "-q"])
    assert result.exit_code == 2, (result.output, result.exception)
    assert url in result.stderr and "--engine dask" in result.stderr
    assert not (tmp_path / "traces.json").exists()


def test_a_missing_local_path_is_still_just_missing(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-logs"
    result = CliRunner().invoke(main, ["analyze", str(missing), "-q"])
    assert result.exit_code == 2
    assert f"no such file or directory: {missing}" in result.stderr
    assert "--engine dask" not in result.stderr


def test_a_url_to_follow_is_refused_at_once(tmp_path: Path) -> None:
    # The follower waits for a named path to appear (a log not written yet): it waited for
    # `s3://acme-logs/inference/` as for a local file, printing nothing, until Ctrl-C.
    import subprocess
    import sys

    from tests.support.servers import child_pythonpath

    done = subprocess.run(
        [sys.executable, "-m", "ridtrace", "analyze", "s3://acme-logs/inference/", "--follow"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
        env={"PYTHONPATH": child_pythonpath(), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2, done.stderr
    assert "not a URL: s3://acme-logs/inference/" in done.stderr
