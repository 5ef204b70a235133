"""A report, export or plot is never written over one of the logs it was made from:
`ridtrace analyze app.jsonl -o app.jsonl` (a slip of the shell's history) replaced the
log, the incident's evidence, with the report about it, and exited as if all was well."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import rt_request
from tests.support.extras import require_extra

COMMANDS = {
    "analyze": ["analyze", "{logs}", "--format", "json", "-o", "{target}"],
    "analyze dask": ["analyze", "{logs}", "--engine", "dask", "-o", "{target}"],
    # A local file named as an fsspec URL, as docs/cli.md shows for the Dask engine.
    "analyze dask url": ["analyze", "file://{logs}", "--engine", "dask", "-o", "{target}"],
    # Other spellings fsspec takes of a local file: each replaced the log it read.
    "analyze dask local url": ["analyze", "local://{logs}", "--engine", "dask", "-o",
                               "{target}"],
    "analyze dask chained url": ["analyze", "simplecache::file://{logs}", "--engine", "dask",
                                 "-o", "{target}"],
    "audit": ["audit", "{logs}", "-o", "{target}"],
    "audit plot": ["audit", "{logs}", "--plot", "{target}"],
    "trace": ["trace", "r1", "{logs}", "-o", "{target}"],
    "export jaeger": ["export", "jaeger", "{logs}", "-o", "{target}"],
}


def _logs(tmp_path: Path) -> Path:
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = rt_request("a" * 16, "r1", 0, 2) + rt_request("b" * 16, "r2", 1, 3)
    (logs / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    return logs


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("named", ["the file", "its directory"])
def test_the_output_is_never_a_log_read(tmp_path: Path, command: str, named: str) -> None:
    if command.startswith("analyze dask"):
        require_extra("dask")
    if command == "audit plot":
        require_extra("plot")
    logs = _logs(tmp_path)
    log = logs / "frontend.jsonl"
    if command == "audit plot":  # an image's name, or the plot is refused for its format
        log = log.rename(logs / "frontend.png")
    before = log.read_bytes()
    source = log if named == "the file" else logs
    # Another spelling of the same file: compared as files, not as paths.
    target = logs / ".." / "logs" / log.name
    args = [a.format(logs=source, target=target) for a in COMMANDS[command]]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert f"will not write over {target}: it is one of the logs read" in result.stderr
    assert log.read_bytes() == before


@pytest.mark.parametrize("engine", ["local", "dask"])
def test_an_earlier_report_beside_the_logs_is_replaced(tmp_path: Path, engine: str) -> None:
    # Judged not a log in the walk ("a JSON document"), it is the report to update; the
    # Dask engine's walk names it by its file:// URL when the logs are named so.
    logs = _logs(tmp_path)
    report = logs / "report.json"
    if engine == "dask":
        require_extra("dask")
        named = [f"file://{logs}", "--engine", "dask"]
    else:
        named = [str(logs)]
    for _ in range(2):
        result = CliRunner().invoke(main, ["analyze", *named, "--format", "json",
                                           "-o", str(report)])
        assert result.exit_code == 0, result.stderr
    assert report.read_text().startswith("{")


@pytest.mark.parametrize("command", ["analyze", "audit", "export jaeger"])
def test_the_output_is_never_the_log_standard_input_reads(tmp_path: Path, command: str) -> None:
    # `ridtrace analyze - -o app.jsonl < app.jsonl`: standard input has no path, so the
    # check passed it over and the report replaced the log it was read from.
    log = _logs(tmp_path) / "frontend.jsonl"
    before = log.read_bytes()
    args = [a.format(logs="-", target=log) for a in COMMANDS[command]]
    with log.open("rb") as stdin:
        done = subprocess.run([sys.executable, "-m", "ridtrace", *args], stdin=stdin,
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert f"will not write over {log}: it is one of the logs read" in done.stderr
    assert log.read_bytes() == before


def test_a_file_url_glob_into_a_dot_folder_never_writes_over_a_log_it_read(
    tmp_path: Path,
) -> None:
    # fsspec's glob reads a dot-folder Python's glob skips: the check, made on the
    # local glob's files, let -o replace that log with the report.
    require_extra("dask")
    logs = _logs(tmp_path)
    hidden = logs / ".k8s"
    hidden.mkdir()
    log = hidden / "worker.jsonl"
    log.write_text((logs / "frontend.jsonl").read_text())
    before = log.read_bytes()
    result = CliRunner().invoke(main, ["analyze", f"file://{logs}/*", "--engine", "dask",
                                       "--format", "json", "-o", str(log)])
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert "it is one of the logs read" in result.stderr and log.read_bytes() == before
