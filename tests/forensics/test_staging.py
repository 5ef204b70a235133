"""A stop that lands while a read's copy directory is being made still removes it.

`ridtrace analyze` stopped by Ctrl-C, SIGTERM or SIGHUP removes the decoded copies in
flight (`staging.remove_all`) and leaves at once. The directory was made first and
noted after: a stop between the two left it behind, as large as the log once the copy
was written (test_cli_ux's stopped-analyze test signals as soon as it sees the
directory, and a loaded machine can deschedule the reader right after the mkdir).
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ridtrace.forensics.reading import staging


@pytest.fixture(autouse=True)
def _reopened() -> Iterator[None]:
    """`remove_all` closes the staging for the rest of the run it ends: these tests call
    it in a process that goes on."""
    yield
    staging.reopen()


@pytest.fixture
def temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_an_interrupt_right_after_the_directory_is_made_leaves_it_known(
    temp_dir: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The main thread's read: the signal handler raises there, at any bytecode.
    real_mkdir = os.mkdir

    def mkdir_then_interrupted(path: object, mode: int = 0o777, **kwargs: object) -> None:
        real_mkdir(path, mode, **kwargs)  # type: ignore[arg-type]
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "mkdir", mkdir_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        staging.make_dir("ridtrace-")
    monkeypatch.setattr(os, "mkdir", real_mkdir)
    staging.remove_all()  # what the stopped command does next
    assert list(temp_dir.iterdir()) == []


def test_a_stop_from_the_main_thread_while_a_reader_makes_its_directory_removes_it(
    temp_dir: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A reading thread has just made its directory when the main thread, stopped, runs
    # remove_all: it must find that directory, not an empty list.
    real_mkdir = os.mkdir
    stopping = threading.Event()
    stopper = threading.Thread(target=lambda: (stopping.set(), staging.remove_all()))

    def mkdir_then_stopped(path: object, mode: int = 0o777, **kwargs: object) -> None:
        real_mkdir(path, mode, **kwargs)  # type: ignore[arg-type]
        stopper.start()
        stopping.wait()
        # Without the lock remove_all is done at once, having found nothing; with it,
        # it waits for make_dir to end, and this bounded join gives it up.
        stopper.join(timeout=1)

    monkeypatch.setattr(os, "mkdir", mkdir_then_stopped)
    made = staging.make_dir("ridtrace-")
    monkeypatch.setattr(os, "mkdir", real_mkdir)
    stopper.join(timeout=30)
    assert not stopper.is_alive()
    assert not made.exists()
    assert list(temp_dir.iterdir()) == []


def test_a_directory_is_removed_and_forgotten_once_released(temp_dir: Path) -> None:
    with staging.staging_dir("ridtrace-") as made:
        (made / "decoded.jsonl").write_bytes(b"{}\n")
        assert made.parent == temp_dir and oct(made.stat().st_mode & 0o777) == "0o700"
    assert list(temp_dir.iterdir()) == []
    staging.remove_all()  # nothing left to remove
