"""A follower writing into pipes nobody reads: the logs that give it plenty to write,
the pipe shrunk so it fills at once, and how a test knows it is full."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path

from tests.forensics.helpers import rt_request

PAIRS = 400  # a duplicate each, ~300 bytes a finding: far more than the pipe holds
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
PIPE_BYTES = 4096


def write_duplicates(directory: Path) -> None:
    """A frontend log of `PAIRS` duplicate ids, a finding each."""
    lines = []
    for n in range(PAIRS):
        lines += rt_request(f"a{n}", f"rid-{n}", n, n + 0.5)
        lines += rt_request(f"b{n}", f"rid-{n}", n + 0.2, n + 0.7)
    (directory / "frontend.jsonl").write_text("\n".join(lines) + "\n")


def small_pipe() -> tuple[int, int]:
    """A pipe (read end, write end) that holds `PIPE_BYTES`."""
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, F_SETPIPE_SZ, PIPE_BYTES)
    return read_end, write_end


def buffered(read_end: int) -> int:
    """How many bytes the pipe holds, unread."""
    held = bytearray(4)
    fcntl.ioctl(read_end, termios.FIONREAD, held)
    return int.from_bytes(held, sys.byteorder)


def wait_until_half_full(read_end: int, process: subprocess.Popen[bytes],
                         why: Callable[[], object] = lambda: "") -> None:
    """Until the follower's findings fill half the pipe (it is past its start, its stop
    handler in place, and soon blocked in a write)."""
    deadline = time.monotonic() + 60
    while buffered(read_end) < PIPE_BYTES // 2:
        assert time.monotonic() < deadline, ("no findings written", why())
        assert process.poll() is None, (process.returncode, why())
        time.sleep(0.05)


def fill_to_the_last_byte(write_end: int) -> None:
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
