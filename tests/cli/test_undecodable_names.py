"""A log whose file name is not UTF-8 (Latin-1 bytes, as copied from another system):
read, and cited with the odd bytes as ``\\xNN`` escapes. The name, as lone surrogates,
stopped every command (exit 4: DuckDB and Arrow take no such text)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.testing.synth import SynthSpec, write_logs
from tests.support.extras import ENGINES


@pytest.mark.parametrize("command", [
    ["analyze", "--format", "json"], ["analyze", "--format", "csv"], ["audit"],
    ["export", "jaeger", "-o", "-"], ["trace", "3"],
])
def test_a_file_named_in_latin1_is_read_and_cited(tmp_path: Path, command: list[str]) -> None:
    write_logs(tmp_path / "plain", SynthSpec(requests=60))
    logs = tmp_path / "logs"
    logs.mkdir()
    odd = os.fsdecode(b"fr\xe9nt-end.jsonl")  # "é" in Latin-1: no UTF-8
    (logs / odd).write_bytes((tmp_path / "plain" / "frontend.jsonl").read_bytes())
    if command[0] == "trace":
        args = [*command, str(logs)]
    elif command[0] == "export":
        args = [*command[:2], str(logs), *command[2:]]
    else:
        args = [command[0], str(logs), *command[1:]]
    result = CliRunner().invoke(main, [*args, "-q"])
    # Not an exception inside the command (the runner reports those as exit 1 too).
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        result.exception
    )
    assert result.exit_code in (0, 1)
    if command == ["analyze", "--format", "json"]:
        doc = json.loads(result.stdout)
        files = {e["file"] for f in doc["findings"] for e in f["evidence"]}
        assert files == {str(logs / "fr\\xe9nt-end.jsonl")}


@pytest.mark.parametrize("command", [["analyze", "--format", "json"], ["audit"],
                                     ["export", "jaeger", "-o", "-"]])
def test_two_files_that_would_show_under_one_name_keep_names_of_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    # "w\xe9.jsonl" spelt with a backslash, beside a name holding the byte 0xE9 (shown
    # as that escape): two inputs of one name stopped every command, exit 4
    # ("Categorical categories must be unique").
    write_logs(tmp_path / "plain", SynthSpec(requests=40, workers=2))
    monkeypatch.chdir(tmp_path)
    logs = Path("logs")
    logs.mkdir()
    (logs / os.fsdecode(b"w\xe9.jsonl")).write_bytes(
        (tmp_path / "plain" / "worker-8101.jsonl").read_bytes())
    (logs / "w\\xe9.jsonl").write_bytes((tmp_path / "plain" / "worker-8102.jsonl").read_bytes())
    args = [*command[:2], str(logs), *command[2:]] if command[0] == "export" else [
        command[0], str(logs), *command[1:]]
    result = CliRunner().invoke(main, [*args, "-q"])
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        result.exception
    )
    assert result.exit_code in (0, 1), result.stderr
    if command[0] == "analyze":
        summary = json.loads(result.stdout)["summary"]
        assert summary["files"] == 2


@pytest.mark.parametrize("engine", ENGINES)
def test_named_one_by_one_they_keep_names_of_their_own_on_either_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str,
) -> None:
    # Named as two arguments (a shell's glob `w*.jsonl`), the Dask engine named each
    # apart from the files of its own argument only: exit 4, "categories must be unique".
    write_logs(tmp_path / "plain", SynthSpec(requests=40, workers=2))
    monkeypatch.chdir(tmp_path)
    odd, spelt = os.fsdecode(b"w\xe9.jsonl"), "w\\xe9.jsonl"
    Path(odd).write_bytes((tmp_path / "plain" / "worker-8101.jsonl").read_bytes())
    Path(spelt).write_bytes((tmp_path / "plain" / "worker-8102.jsonl").read_bytes())
    result = CliRunner().invoke(main, ["analyze", spelt, odd, "--format", "json", "-q",
                                       "--engine", engine])
    assert result.exit_code in (0, 1, 3), (result.exception, result.stderr)
    doc = json.loads(result.stdout)
    assert doc["summary"]["files"] == 2
    cited = {e["file"] for f in doc["findings"] for e in f["evidence"]}
    assert cited <= {spelt, f"./{spelt}"}
