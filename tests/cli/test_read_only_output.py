"""A report into a read-only file system is refused as the shell's `>` refuses it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.testing.synth import SynthSpec, write_logs


class _ReadOnlyMount:
    """`os.access` and `os.statvfs` as a read-only mount at `directory` answers them (a
    real one needs a mount namespace; root passes `os.access` on any mode bits)."""

    def __init__(self, directory: Path) -> None:
        self.directory = os.path.realpath(directory)
        self.access, self.statvfs = os.access, os.statvfs

    def _inside(self, path: Any) -> bool:
        return os.path.realpath(path).startswith(self.directory)

    def fake_access(self, path: Any, mode: int, **kw: Any) -> bool:
        return False if self._inside(path) and mode & os.W_OK else self.access(path, mode, **kw)

    def fake_statvfs(self, path: Any) -> Any:
        real = self.statvfs(path)
        if not self._inside(path):
            return real
        return os.statvfs_result((*real[:8], real.f_flag | os.ST_RDONLY, real.f_namemax))


@pytest.mark.parametrize("target", ["new.json", "existing.json"])
def test_a_report_into_a_read_only_mount_says_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    # Told "Permission denied", a user changes modes, which cannot help on a read-only
    # mount; the shell's `>` and `ridtrace demo --out` said "Read-only file system".
    logs, ro = tmp_path / "logs", tmp_path / "ro"
    write_logs(logs, SynthSpec(requests=10))
    ro.mkdir()
    (ro / "existing.json").write_text("{}\n")
    mount = _ReadOnlyMount(ro)
    monkeypatch.setattr(os, "access", mount.fake_access)
    monkeypatch.setattr(os, "statvfs", mount.fake_statvfs)
    done = CliRunner().invoke(main, ["analyze", str(logs), "-q", "-o", str(ro / target)])
    assert done.exit_code == 2
    assert "Read-only file system" in done.stderr and "Permission denied" not in done.stderr
