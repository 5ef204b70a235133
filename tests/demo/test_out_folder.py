"""A `--out` the demo cannot make is bad usage, said in one line.

`ridtrace demo --out /opt/demo` without the right to create it (or a path through a
file, or under /proc) ended in a traceback and "internal error (exit 4); please report
it", where an unwritable `ridtrace serve --log-file` is exit 2 naming the option.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import demo_argv


@pytest.mark.parametrize("where", ["through a file", "under /proc"])
def test_an_out_folder_that_cannot_be_made_is_exit_2(tmp_path: Path, where: str) -> None:
    if where == "through a file":
        (tmp_path / "notes.txt").write_text("not a folder\n")
        out = tmp_path / "notes.txt" / "demo-out"
    else:
        out = Path("/proc/ridtrace-demo-out")  # no one, root included, creates one there
    done = subprocess.run(demo_argv(out), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "--out" in done.stderr and str(out) in done.stderr, done.stderr
    assert done.stdout == ""  # stopped before it printed or started anything


@pytest.mark.parametrize("left", ["a file named legacy", "a link for legacy/logs"])
def test_an_earlier_run_it_cannot_replace_is_exit_2(tmp_path: Path, left: str) -> None:
    # What forget_earlier_run could not remove raised out of it: a traceback, exit 4.
    out = tmp_path / "out"
    out.mkdir()
    if left == "a file named legacy":
        (out / "legacy").write_text("notes\n")
        named = out / "legacy"
    else:
        elsewhere = tmp_path / "other-disk"
        elsewhere.mkdir()
        (elsewhere / "frontend.jsonl").write_text("{}\n")
        (out / "legacy").mkdir()
        (out / "legacy" / "logs").symlink_to(elsewhere)
        named = out / "legacy" / "logs"
    done = subprocess.run(demo_argv(out), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "--out" in done.stderr and str(named) in done.stderr, done.stderr
    assert done.stdout == ""
    if left != "a file named legacy":
        assert (tmp_path / "other-disk" / "frontend.jsonl").exists()  # left alone


def test_a_second_demo_on_the_same_out_folder_is_refused(tmp_path: Path) -> None:
    # Two demos in one folder mixed their logs: one said FAIL as if analyze had missed
    # crossed streams, the other a confident OK over another run's lines.
    import fcntl
    import os

    out = tmp_path / "demo-out"
    (out / "legacy").mkdir(parents=True)
    (out / "legacy" / "report.json").write_text("{}")  # the running demo's
    fd = os.open(out, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running demo holds it
        done = subprocess.run(demo_argv(out), capture_output=True, text=True, timeout=60)
    finally:
        os.close(fd)
    assert done.returncode == 2, done.stderr
    assert f"another ridtrace demo is writing in {out}" in done.stderr
    assert (out / "legacy" / "report.json").read_text() == "{}"  # nothing of it removed


def test_a_file_the_earlier_run_cannot_lose_is_named_under_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # shutil.rmtree names an entry it cannot remove by itself ("a.jsonl"), relative to
    # the folder it removes: the message named a file the user could not find.
    import click

    from ridtrace.cli import demo
    from ridtrace.demo import run

    def refused(out_dir: Path, policy: str) -> None:
        raise PermissionError(13, "Permission denied", "a.jsonl")

    monkeypatch.setattr(run, "forget_earlier_run", refused)
    with pytest.raises(click.BadParameter) as bad:
        demo._forget_earlier_runs(tmp_path)
    assert f"a.jsonl (under {tmp_path / 'legacy'})" in str(bad.value.message)
