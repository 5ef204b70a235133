"""analyze over a log rotated in the middle of an incident: the answer is the unrotated one,
whatever order the parts are named in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import legacy_rotated


def _analyze(*args: str) -> tuple[int, dict[str, object]]:
    result = CliRunner().invoke(main, ["analyze", *args, "--format", "json", "-q"])
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize("order", ["directory", "oldest first", "newest first", "glob"])
def test_legacy_duplicate_across_a_rotation_is_found(tmp_path: Path, order: str) -> None:
    rotated, live = legacy_rotated(tmp_path / "rot")
    args = {
        "directory": [str(tmp_path / "rot")],
        "oldest first": [str(rotated), str(live)],
        "newest first": [str(live), str(rotated)],
        "glob": [str(tmp_path / "rot" / "frontend.jsonl*")],
    }[order]
    code, doc = _analyze(*args)
    found = [(f["kind"], f["request_id"]) for f in doc["findings"]]  # type: ignore[index]
    assert ("duplicate_in_flight", "7") in found
    assert code == 1
