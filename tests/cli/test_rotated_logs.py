"""analyze over a log rotated in the middle of an incident: the answer is the unrotated one,
whatever order the parts are named in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.testing.synth import SynthSpec, write_logs
from tests.cli.helpers import analyze_json
from tests.forensics.helpers import legacy_rotated
from tests.support.follower import start_follower


@pytest.mark.parametrize("order", ["directory", "oldest first", "newest first", "glob"])
def test_legacy_duplicate_across_a_rotation_is_found(tmp_path: Path, order: str) -> None:
    rotated, live = legacy_rotated(tmp_path / "rot")
    args = {
        "directory": [str(tmp_path / "rot")],
        "oldest first": [str(rotated), str(live)],
        "newest first": [str(live), str(rotated)],
        "glob": [str(tmp_path / "rot" / "frontend.jsonl*")],
    }[order]
    code, doc = analyze_json(*args)
    found = [(f["kind"], f["request_id"]) for f in doc["findings"]]
    assert ("duplicate_in_flight", "7") in found
    assert code == 1


ROTATED_AT = 300  # the frontend log's line where logrotate cut it


@pytest.fixture(scope="module")
def unrotated_and_rotated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Synthetic logs with every fault, and the same logs with the frontend's rotated."""
    whole, rotated = tmp_path_factory.mktemp("whole"), tmp_path_factory.mktemp("rotated")
    write_logs(whole, SynthSpec(requests=200))
    for path in whole.iterdir():
        (rotated / path.name).write_bytes(path.read_bytes())
    lines = (whole / "frontend.jsonl").read_text().splitlines(keepends=True)
    (rotated / "frontend.jsonl.1").write_text("".join(lines[:ROTATED_AT]))
    (rotated / "frontend.jsonl").write_text("".join(lines[ROTATED_AT:]))
    return whole, rotated


def _where_rotated(whole: Path, rotated: Path, file: str, line: int) -> dict[str, object]:
    """Where line `line` of `file` under `whole` is once the frontend log is rotated."""
    name = Path(file).name
    if name == "frontend.jsonl" and line <= ROTATED_AT:
        return {"file": str(rotated / "frontend.jsonl.1"), "line": line}
    if name == "frontend.jsonl":
        return {"file": str(rotated / name), "line": line - ROTATED_AT}
    return {"file": str(rotated / name), "line": line}


def _rotated_findings(whole: Path, rotated: Path) -> list[dict[str, Any]]:
    """The unrotated logs' findings, their evidence moved to where rotation put it."""
    code, doc = analyze_json(str(whole))
    assert code == 1 and doc["summary"]["crossed_stream"] == 1
    findings: list[dict[str, Any]] = doc["findings"]
    for finding in findings:
        finding["evidence"] = [_where_rotated(whole, rotated, e["file"], e["line"])
                               for e in finding["evidence"]]
    return findings


def test_evidence_names_the_file_each_line_is_in(
    unrotated_and_rotated: tuple[Path, Path],
) -> None:
    whole, rotated = unrotated_and_rotated
    code, doc = analyze_json(str(rotated))
    assert code == 1
    assert doc["findings"] == _rotated_findings(whole, rotated)


def test_csv_evidence_names_the_file_each_line_is_in(
    unrotated_and_rotated: tuple[Path, Path],
) -> None:
    whole, rotated = unrotated_and_rotated
    out = CliRunner().invoke(main, ["analyze", str(rotated), "--format", "csv", "-q"]).stdout
    for finding in _rotated_findings(whole, rotated):
        assert ";".join(f"{e['file']}:{e['line']}" for e in finding["evidence"]) in out


def test_parts_named_in_no_rotation_scheme_go_by_time(tmp_path: Path) -> None:
    # A copy saved under a name of one's own, listed before the older part: the span's
    # lines in each file are taken in the order of its first time there.
    rotated, live = legacy_rotated(tmp_path / "rot")
    live.rename(tmp_path / "rot" / "after.jsonl")
    rotated.rename(tmp_path / "rot" / "before.jsonl")
    code, doc = analyze_json(str(tmp_path / "rot"))
    assert [(f["kind"], f["request_id"]) for f in doc["findings"]] == [
        ("duplicate_in_flight", "7")]
    assert code == 1


def test_follow_cites_each_line_in_the_file_it_is_in_as_analyze_does(tmp_path: Path) -> None:
    # A caller's last line after the rotation is in the live file; --follow cited it at
    # that line number in the rotated part, a line of another request (or of none).
    legacy_rotated(tmp_path / "rot")
    _, doc = analyze_json(str(tmp_path / "rot"))
    [batch] = doc["findings"]
    follower = start_follower([str(tmp_path / "rot")], "--from-start")
    follower.wait_for(lambda: bool(follower.findings()), timeout=60, what="the duplicate")
    assert follower.stop() == 1
    [live] = [p.json() for p in follower.findings()]
    assert (live["kind"], live["request_id"]) == (batch["kind"], batch["request_id"])
    assert live["evidence"] == batch["evidence"]
