"""A glob over a folder the user may not list says so, as a walk of it does.

`ridtrace analyze logs` named `logs/node-b: cannot list it` and exited 3; given
`'logs/**/*.jsonl'` (or `'logs/*/*.jsonl'`), the same folder was passed over without a
word and the run exited 0: complete and clean, on a frontend's log it never read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.testing.synth import SynthSpec, write_logs


def _deny_listing(monkeypatch: pytest.MonkeyPatch, denied: Path) -> None:
    """Listing `denied` fails as for a folder of mode 000, which root never meets."""
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        if not isinstance(path, int) and os.path.abspath(os.fspath(path)) == str(denied):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)


@pytest.mark.parametrize("pattern", ["logs/**/*.jsonl", "logs/*/*.jsonl"])
def test_a_folder_a_glob_cannot_list_makes_the_read_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pattern: str
) -> None:
    made = write_logs(tmp_path / "made", SynthSpec(requests=100, crossed=0, collisions=0,
                                                   duplicates=0))
    for i, path in enumerate(made.files):
        node = tmp_path / "logs" / f"node-{'ab'[i % 2]}"
        node.mkdir(parents=True, exist_ok=True)
        (node / path.name).write_bytes(path.read_bytes())
    monkeypatch.chdir(tmp_path)
    _deny_listing(monkeypatch, tmp_path / "logs" / "node-b")
    for command in (["analyze"], ["audit"]):
        done = CliRunner().invoke(main, [*command, pattern, "--format", "json"])
        assert done.exit_code == 3, done.output
        summary = json.loads(done.stdout)["summary"]
        assert summary["incomplete"] is True
        assert {"file": "logs/node-b", "reason": "cannot list it: Permission denied"} \
            in summary["unreadable_files"]


def test_a_glob_into_a_folder_that_may_not_be_searched_leaves_the_rest_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The pattern's own text was looked at as a file name first: under a folder without
    # search permission that is refused, and the whole run stopped (exit 2) without
    # reading the other inputs, a duplicate among them.
    made = write_logs(tmp_path / "ok", SynthSpec(requests=100, crossed=0, collisions=0,
                                                 duplicates=1))
    locked = tmp_path / "sub"
    locked.mkdir()
    (locked / "frontend.jsonl").write_bytes(made.files[0].read_bytes())
    monkeypatch.chdir(tmp_path)
    _deny_listing(monkeypatch, locked)
    real_stat = Path.stat

    def stat(self: Path, *, follow_symlinks: bool = True) -> Any:
        if Path(os.path.abspath(self)).parent == locked:  # no search (x) permission
            raise PermissionError(13, "Permission denied", str(self))
        return real_stat(self, follow_symlinks=follow_symlinks)

    monkeypatch.setattr(Path, "stat", stat)
    for pattern in ("sub/*.jsonl", "sub/**/*.jsonl"):
        done = CliRunner().invoke(main, ["analyze", pattern, "ok", "--format", "json"])
        assert done.exit_code == 1, done.output  # the duplicate in ok/, and incomplete
        summary = json.loads(done.stdout)["summary"]
        assert summary["duplicate_in_flight"] == 1 and summary["incomplete"] is True
        assert {"file": "sub", "reason": "cannot list it: Permission denied"} \
            in summary["unreadable_files"], summary
