"""A second stop signal while a finding is being written.

A follower printing thousands of findings is almost always in a write when Ctrl-C comes
twice. The second signal gave up on every write under way at once: stdout (and a
terminal's stderr with it) went to /dev/null, and the run ended with exit 2, "nothing
read it", and no summary, though a file or a terminal had taken every line. A write
under way now gets a moment; one that is really blocked is still given up on.
"""

from __future__ import annotations

import os
import signal
import time

from ridtrace.cli.follow_stop import StopFlag


def test_a_write_under_way_at_the_second_signal_is_not_given_up_on() -> None:
    read_end, write_end = os.pipe()
    try:
        with StopFlag(quiet=True) as stop, stop.writing(write_end, "findings"):
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
            os.write(write_end, b"a finding a reader takes\n")
        assert stop.now() and stop.lost is None
        assert os.read(read_end, 100) == b"a finding a reader takes\n"
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_write_still_blocked_after_the_second_signal_is_given_up_on() -> None:
    read_end, write_end = os.pipe()
    keep = os.dup(write_end)  # the descriptor the stop points at /dev/null
    try:
        with StopFlag(quiet=True) as stop, stop.writing(write_end, "findings"):
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
            started = time.monotonic()
            while stop.lost is None and time.monotonic() - started < 10:
                time.sleep(0.01)  # nothing reads: the write would block; the grace ends
        assert stop.lost == "findings"
        assert time.monotonic() - started < 3  # a moment, not the first stop's grace
    finally:
        for fd in (read_end, write_end, keep):
            os.close(fd)
