"""A stop reaches a follower whose stdout nobody reads any more.

An alerting script that hangs (or a `| less` left on its first page) stops reading the
follower's findings: the pipe fills and the follower blocks writing one. A SIGTERM then
(a container stop, `timeout`) was taken by the handler, and the write went on waiting for
good: no summary, no exit, until SIGKILL. The follower gives the reader a moment, then
drops what it cannot write and exits 2, as for any stdout it cannot write.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.support.full_pipes import small_pipe, wait_until_half_full, write_duplicates
from tests.support.signals import hangup_as_from_a_terminal


@pytest.mark.parametrize("fmt", ["json", "table"])
def test_sigterm_ends_a_follower_blocked_on_a_full_stdout(tmp_path: Path, fmt: str) -> None:
    write_duplicates(tmp_path)
    read_end, write_end = small_pipe()
    process = subprocess.Popen(
        [sys.executable, "-m", "ridtrace", "analyze", str(tmp_path), "--follow", "--from-start",
         "--format", fmt, "--poll-interval", "0.2s"],
        stdout=write_end, stderr=subprocess.PIPE, preexec_fn=hangup_as_from_a_terminal,
    )
    os.close(write_end)
    stderr: list[bytes] = []
    assert process.stderr is not None
    pump = threading.Thread(target=lambda: stderr.extend(process.stderr or []), daemon=True)
    pump.start()
    try:
        # The findings fill the pipe nobody reads: the follower is (or soon will be)
        # blocked in a write when the stop comes.
        wait_until_half_full(read_end, process, lambda: b"".join(stderr))
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=20)  # hung for good before the fix
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(read_end)
    pump.join(timeout=5)
    text = b"".join(stderr).decode()
    assert code == 2, text
    assert "cannot write findings to standard output" in text
