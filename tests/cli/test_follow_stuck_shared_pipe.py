"""A stop reaches a follower whose stdout and stderr are one pipe (or two) nobody reads.

`ridtrace analyze --follow logs 2>&1 | alert-script`: when the script hangs, the pipe
fills with findings, and stderr is that same full pipe. A SIGTERM then wrote the
"stopping" line to stderr inside the signal handler, where it blocked for good (the
stdout write's grace could not end it: only stdout was pointed at /dev/null); with -q the
run got further, then blocked writing "cannot write findings ..." to the same pipe. Either
way the follower hung until SIGKILL. It must exit 2, as for a stdout nobody reads.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.forensics.helpers import rt_request
from tests.support.signals import hangup_as_from_a_terminal

PAIRS = 400  # a duplicate each: far more findings than the shrunk pipe holds
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


def _duplicates(directory: Path) -> None:
    lines = []
    for n in range(PAIRS):
        lines += rt_request(f"a{n}", f"rid-{n}", n, n + 0.5)
        lines += rt_request(f"b{n}", f"rid-{n}", n + 0.2, n + 0.7)
    (directory / "frontend.jsonl").write_text("\n".join(lines) + "\n")


def _buffered(read_end: int) -> int:
    held = bytearray(4)
    fcntl.ioctl(read_end, termios.FIONREAD, held)
    return int.from_bytes(held, sys.byteorder)


def _fill_to_the_last_byte(write_end: int) -> None:
    """Take whatever room the follower's findings left, so no write of any size fits.

    The pipe is reopened for a description of its own: O_NONBLOCK on the follower's
    shared one would turn its blocked writes into errors."""
    own = os.open(f"/proc/self/fd/{write_end}", os.O_WRONLY | os.O_NONBLOCK)
    try:
        while True:
            os.write(own, b"#")
    except BlockingIOError:
        pass
    finally:
        os.close(own)


@pytest.mark.parametrize("quiet", [False, True], ids=["notice", "quiet"])
@pytest.mark.parametrize("fmt", ["json", "table"])
def test_sigterm_ends_a_follower_whose_stdout_and_stderr_are_one_full_pipe(
    tmp_path: Path, fmt: str, quiet: bool,
) -> None:
    _duplicates(tmp_path)
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, F_SETPIPE_SZ, 4096)
    process = subprocess.Popen(
        [sys.executable, "-m", "ridtrace", "analyze", str(tmp_path), "--follow", "--from-start",
         "--format", fmt, "--poll-interval", "0.2s", *(["-q"] if quiet else [])],
        stdout=write_end, stderr=subprocess.STDOUT, preexec_fn=hangup_as_from_a_terminal,
    )
    try:
        # Findings fill the pipe nobody reads (the follower is past its start: its stop
        # handler is in place) ...
        deadline = time.monotonic() + 60
        while _buffered(read_end) < 2048:
            assert time.monotonic() < deadline, "no findings written"
            assert process.poll() is None, process.returncode
            time.sleep(0.05)
        # ... to its last byte: the "stopping" line cannot fit either.
        _fill_to_the_last_byte(write_end)
        os.close(write_end)
        write_end = -1
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=20)  # hung for good before the fix
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if write_end >= 0:
            os.close(write_end)
        os.close(read_end)
    # Exit 2 as for any output nobody reads; its message had nowhere to go but that pipe.
    assert code == 2


@pytest.mark.parametrize("fmt", ["json", "table"])
def test_sigterm_ends_a_quiet_follower_whose_stderr_is_another_full_pipe(
    tmp_path: Path, fmt: str,
) -> None:
    # stdout and stderr each to a script that hung: with -q no "stopping" line gave
    # stderr up, and the closing "cannot write findings ..." blocked on it for good.
    _duplicates(tmp_path)
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    for end in (out_write, err_write):
        fcntl.fcntl(end, F_SETPIPE_SZ, 4096)
    process = subprocess.Popen(
        [sys.executable, "-m", "ridtrace", "analyze", str(tmp_path), "--follow", "--from-start",
         "--format", fmt, "--poll-interval", "0.2s", "-q"],
        stdout=out_write, stderr=err_write, preexec_fn=hangup_as_from_a_terminal,
    )
    try:
        deadline = time.monotonic() + 60
        while _buffered(out_read) < 2048:
            assert time.monotonic() < deadline, "no findings written"
            assert process.poll() is None, process.returncode
            time.sleep(0.05)
        _fill_to_the_last_byte(out_write)
        _fill_to_the_last_byte(err_write)
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=20)  # hung for good before the fix
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for end in (out_read, out_write, err_read, err_write):
            os.close(end)
    assert code == 2
