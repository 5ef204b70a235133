"""A stop reaches a follower whose stdout and stderr are one pipe (or two) nobody reads.

`ridtrace analyze --follow logs 2>&1 | alert-script`: when the script hangs, the pipe
fills with findings, and stderr is that same full pipe. A SIGTERM then wrote the
"stopping" line to stderr inside the signal handler, where it blocked for good (the
stdout write's grace could not end it: only stdout was pointed at /dev/null); with -q the
run got further, then blocked writing "cannot write findings ..." to the same pipe. Either
way the follower hung until SIGKILL. It must exit 2, as for a stdout nobody reads.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.full_pipes import (
    fill_to_the_last_byte,
    small_pipe,
    wait_until_half_full,
    write_duplicates,
)
from tests.support.signals import hangup_as_from_a_terminal


@pytest.mark.parametrize("quiet", [False, True], ids=["notice", "quiet"])
@pytest.mark.parametrize("fmt", ["json", "table"])
def test_sigterm_ends_a_follower_whose_stdout_and_stderr_are_one_full_pipe(
    tmp_path: Path, fmt: str, quiet: bool,
) -> None:
    write_duplicates(tmp_path)
    read_end, write_end = small_pipe()
    process = subprocess.Popen(
        [sys.executable, "-m", "ridtrace", "analyze", str(tmp_path), "--follow", "--from-start",
         "--format", fmt, "--poll-interval", "0.2s", *(["-q"] if quiet else [])],
        stdout=write_end, stderr=subprocess.STDOUT, preexec_fn=hangup_as_from_a_terminal,
    )
    try:
        # Findings fill the pipe nobody reads (the follower is past its start: its stop
        # handler is in place) ...
        wait_until_half_full(read_end, process)
        # ... to its last byte: the "stopping" line cannot fit either.
        fill_to_the_last_byte(write_end)
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
    write_duplicates(tmp_path)
    out_read, out_write = small_pipe()
    err_read, err_write = small_pipe()
    process = subprocess.Popen(
        [sys.executable, "-m", "ridtrace", "analyze", str(tmp_path), "--follow", "--from-start",
         "--format", fmt, "--poll-interval", "0.2s", "-q"],
        stdout=out_write, stderr=err_write, preexec_fn=hangup_as_from_a_terminal,
    )
    try:
        wait_until_half_full(out_read, process)
        fill_to_the_last_byte(out_write)
        fill_to_the_last_byte(err_write)
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=20)  # hung for good before the fix
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for end in (out_read, out_write, err_read, err_write):
            os.close(end)
    assert code == 2
