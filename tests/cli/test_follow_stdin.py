"""`ridtrace analyze - --follow`: standard input followed as it comes, to its end."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.forensics.helpers import rt, rt_request, ts
from tests.support.follower import start_follower


def test_standard_input_is_followed_as_it_comes_and_ends_with_its_writer() -> None:
    # `kubectl logs -f … | ridtrace analyze - --follow`: '-' was waited for as a file
    # named '-' that never appeared; nothing was read and the run ended clean (exit 0).
    follower = start_follower(["-"], stdin=subprocess.PIPE)
    try:
        pipe = follower.process.stdin
        assert pipe is not None
        first = [*rt_request("a", "7", 0, 2),
                 rt("response.unlinked", time=ts(2), request_id="7", span_id="a",
                    trace_id=f"{'a':0>32}")]
        pipe.write("".join(line + "\n" for line in first).encode())
        pipe.flush()
        follower.wait_for(lambda: len(follower.findings()) == 1, timeout=30,
                          what="the Unlinked error while the writer still writes")
        last = rt_request("b", "8", 3, 4)
        # The writer ends without a last newline: that line is read as a line.
        pipe.write(("\n".join(last)).encode())
        pipe.close()
        code = follower.process.wait(timeout=30)  # its writer closed it: nothing more can come
    finally:
        follower.stop()  # SIGTERM, if it still runs (a failed check)
    summary = follower.summary()
    assert (summary["lines"], summary["bad_lines"], summary["requests"]) == (5, 0, 2), summary
    assert follower.findings()[0].json()["evidence"] == [{"file": "<stdin>", "line": 3}]
    assert code == 1


def test_a_named_pipe_is_followed_once_its_writer_comes(tmp_path: Path) -> None:
    # `ridtrace analyze --follow <(kubectl logs -f …)`, or a fifo a collector writes:
    # it was listed as ignored and never opened (exit 0 on an Unlinked error).
    fifo = tmp_path / "frontend.pipe"
    os.mkfifo(fifo)
    follower = start_follower([str(fifo)])
    try:
        lines = [*rt_request("a", "7", 0, 2),
                 rt("response.unlinked", time=ts(2), request_id="7", span_id="a",
                    trace_id=f"{'a':0>32}")]
        # The writer comes after the follower opened it (ENXIO here if it never did).
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.set_blocking(fd, True)
        with open(fd, "w") as writer:
            writer.write("".join(line + "\n" for line in lines))
            writer.flush()
            follower.wait_for(lambda: len(follower.findings()) == 1, timeout=30,
                              what="the Unlinked error")
        code = follower.process.wait(timeout=30)
    finally:
        follower.stop()
    assert follower.findings()[0].json()["evidence"] == [{"file": str(fifo), "line": 3}]
    assert follower.summary()["lines"] == 3
    assert code == 1


def test_the_start_line_says_standard_input_is_read_from_its_first_line(
    tmp_path: Path,
) -> None:
    # `kubectl logs -f pod | ridtrace analyze - --follow` said "following 1 file(s) from
    # the end", as if the pod's history kubectl writes first were skipped: it is read.
    log = tmp_path / "frontend.jsonl"
    log.write_text(rt_request("a", "7", 0, 2)[0] + "\n")
    follower = start_follower(["-", str(log)], stdin=subprocess.PIPE)
    try:
        started = next(line for line in follower.stderr if "following" in line)
    finally:
        follower.stop()
    assert started.startswith(
        "ridtrace: following 1 file(s) from the end and standard input from its first line,"
    ), started
