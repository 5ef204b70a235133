"""`--help` and `--version` that cannot reach standard output.

Written by click itself, not through the report's writer: a full disk was a traceback
and exit 4 (ridtrace failed), stdout closed before the run (``>&-``) an ignored
exception and exit 120, and a closed pipe exit 1, which a CI gate reads as error
findings. Each is the report's failure: exit 2 and one line naming it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.servers import child_pythonpath

_ASKS = [["--version"], ["--help"], ["analyze", "--help"], ["export", "jaeger", "--help"]]


def _ridtrace(args: list[str], **streams: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "ridtrace", *args], stderr=subprocess.PIPE,
                          timeout=60, check=False, **streams)  # type: ignore[call-overload]


def _assert_unwritten(done: subprocess.CompletedProcess[bytes], reason: bytes) -> None:
    assert done.returncode == 2, done.stderr
    assert b"Traceback" not in done.stderr and b"Exception ignored" not in done.stderr
    assert b"cannot write to standard output: " + reason in done.stderr, done.stderr


@pytest.mark.parametrize("args", _ASKS)
def test_a_full_disk(args: list[str]) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    with open("/dev/full", "wb") as full:
        _assert_unwritten(_ridtrace(args, stdout=full), b"No space left on device")


@pytest.mark.parametrize("args", _ASKS)
def test_a_closed_pipe(args: list[str]) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader (`head`, `grep -q`) is gone before the first write
    try:
        _assert_unwritten(_ridtrace(args, stdout=write_end), b"Broken pipe")
    finally:
        os.close(write_end)


@pytest.mark.parametrize("args", _ASKS)
def test_stdout_closed_before_the_run(args: list[str]) -> None:
    closed = ["sh", "-c", 'exec "$0" "$@" >&-', sys.executable, "-m", "ridtrace", *args]
    done = subprocess.run(closed, stderr=subprocess.PIPE, timeout=60, check=False,
                          env={**os.environ, "PYTHONPATH": child_pythonpath()})
    _assert_unwritten(done, b"Bad file descriptor")


def test_help_and_version_still_print() -> None:
    done = _ridtrace(["--version"], stdout=subprocess.PIPE)
    assert done.returncode == 0 and done.stdout.startswith(b"ridtrace ")
    done = _ridtrace(["analyze", "--help"], stdout=subprocess.PIPE)
    assert done.returncode == 0 and b"--allow-incomplete" in done.stdout
