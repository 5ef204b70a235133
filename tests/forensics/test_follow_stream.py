"""A followed stream (standard input, a named pipe) once the follow is asked to stop."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from ridtrace.forensics.live import stream
from ridtrace.forensics.live.follow import Follower, FollowSettings
from ridtrace.forensics.live.stream import StreamTail
from tests.forensics.helpers import rt_request


@pytest.fixture
def pipe() -> Iterator[tuple[StreamTail, int]]:
    read_end, write_end = os.pipe()
    tail = StreamTail(read_end, "pipe", Path("pipe"))
    try:
        yield tail, write_end
    finally:
        tail.close()
        os.close(write_end)


def test_a_stop_between_lines_reads_nothing_written_after_it(
    pipe: tuple[StreamTail, int],
) -> None:
    # The bound fell on a newline; the next read took one more line (or the start of
    # one, later a bad line) from a writer still writing after the signal.
    tail, writer = pipe
    os.write(writer, b'{"n": 1}\n{"n": 2}\n')
    tail.bound()
    chunk = tail.read(1 << 20)
    assert chunk is not None and bytes(chunk.data) == b'{"n": 1}\n{"n": 2}\n'
    os.write(writer, b'{"n": 3}\n{"n": 4')
    assert tail.read(1 << 20) is None
    assert tail.flush_held() is None


def test_a_line_the_stop_cuts_is_read_to_its_newline(pipe: tuple[StreamTail, int]) -> None:
    tail, writer = pipe
    os.write(writer, b'{"n": 1}\n{"n":')
    tail.bound()
    os.write(writer, b' 2}\n{"n": 3}\n')
    chunk = tail.read(1 << 20)
    assert chunk is not None and bytes(chunk.data) == b'{"n": 1}\n{"n": 2}\n'
    assert tail.read(1 << 20) is None


def test_a_wrapped_stream_is_unwrapped_as_a_file_is(pipe: tuple[StreamTail, int]) -> None:
    # `kubectl logs -f --timestamps pod | ridtrace analyze - --follow`: docs/cli.md says
    # wrapped lines are unwrapped under --follow; a stream's were read as they came,
    # every line "not JSON".
    tail, writer = pipe
    stamp = b"2026-11-29T10:00:00.123456789Z "
    os.write(writer, stamp + b'{"n": 1}\n' + stamp + b'{"n": 2}\n')
    chunk = tail.read(1 << 20)
    assert chunk is not None and bytes(chunk.data) == b'{"n": 1}\n{"n": 2}\n'
    os.write(writer, stamp + b'{"n": 3}')  # no newline yet when the follow ends
    assert tail.read(1 << 20) is None
    last = tail.flush_held()
    assert last is not None and bytes(last.data) == b'{"n": 3}\n'


def test_a_read_that_is_all_one_long_line_says_more_is_waiting(
    pipe: tuple[StreamTail, int],
) -> None:
    # It hands out no line; taken for "nothing left", a stop then left the rest unread.
    tail, writer = pipe
    os.write(writer, b'{"n": "' + b"x" * 10_000 + b'"}\n{"n": 2}\n')
    tail.bound()
    assert tail.read(4096) is None and tail.more_to_read
    while tail.more_to_read:
        chunk = tail.read(4096)
    assert chunk is not None and bytes(chunk.data).endswith(b'{"n": 2}\n')
    assert tail.read(4096) is None and not tail.more_to_read


@pytest.fixture
def two_pipes() -> Iterator[list[tuple[str, int]]]:
    """Two pipes as `<(…)` names them (/dev/fd/N), with their write ends."""
    ends = [os.pipe(), os.pipe()]
    try:
        yield [(f"/dev/fd/{read_end}", write_end) for read_end, write_end in ends]
    finally:
        for read_end, write_end in ends:
            os.close(read_end)
            with contextlib.suppress(OSError):  # closed by the test
                os.close(write_end)


def _write(fd: int, lines: list[str]) -> None:
    os.write(fd, "".join(line + "\n" for line in lines).encode())


def _follow_to_end(follower: Follower, writers: list[int]) -> list[str]:
    for fd in writers:
        os.close(fd)
    kinds = []
    while not follower.watch.finished():
        kinds += [f["kind"] for f in follower.poll()[0]]
    return kinds + [f["kind"] for f in follower.finish()]


def test_a_backlog_replayed_through_pipes_is_not_taken_for_the_present(
    two_pipes: list[tuple[str, int]],
) -> None:
    # `ridtrace analyze <(kubectl logs -f frontend-0) <(kubectl logs -f frontend-1)
    # --follow`: kubectl writes each pod's history first, as fast as it can. A pipe read
    # empty between two of its writes counted as read to the end, so request 7 on
    # frontend-0 looked still open when frontend-1's backlog showed id 7 again a second
    # after it ended: a back-to-back reuse printed as duplicate_in_flight, exit 1.
    (first, first_writer), (second, second_writer) = two_pipes
    start, end = rt_request("a", "7", 0, 2)
    follower = Follower([first, second], FollowSettings(from_start=True))
    try:
        follower.start()
        _write(first_writer, [start])
        _write(second_writer, rt_request("b", "7", 3, 4))
        found = [f["kind"] for f in follower.poll()[0]]
        _write(first_writer, [end])  # the rest of frontend-0's backlog
        found += _follow_to_end(follower, [first_writer, second_writer])
    finally:
        follower.close()
    assert found == []


def test_a_quiet_pipe_counts_as_read_to_its_end(
    two_pipes: list[tuple[str, int]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Once a stream has been quiet (QUIET_S), a request it left open is open: a second
    # holder of its id on another stream is a duplicate at once, before either ends.
    monkeypatch.setattr(stream, "QUIET_S", 0.0)
    with _one_id_started_on_each(two_pipes) as follower:
        found = [f["kind"] for f in follower.poll()[0]]
        found += [f["kind"] for f in follower.poll()[0]]
    assert found == ["duplicate_in_flight"]


def test_a_finding_held_by_a_quiet_pipe_still_comes_within_the_live_latency_target(
    two_pipes: list[tuple[str, int]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The live target is a finding at most 2 s after its line (docs/performance.md). A
    # judgement a quiet stream could still change waits until the stream counts as
    # caught up: at 2 s of quiet, plus a poll interval (0.25 s) and a parse, a duplicate
    # on one pipe beside another that had gone quiet came past the target. A pipe quiet
    # for what the target leaves after a poll and a parse counts as caught up.
    clock = [1000.0]
    monkeypatch.setattr(stream, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    with _one_id_started_on_each(two_pipes) as follower:
        found = [f["kind"] for f in follower.poll()[0]]
        assert found == []  # just read: not yet known to be the present
        clock[0] += 2.0 - FollowSettings().interval - 0.25
        found += [f["kind"] for f in follower.poll()[0]]
    assert found == ["duplicate_in_flight"]


@contextlib.contextmanager
def _one_id_started_on_each(two_pipes: list[tuple[str, int]]) -> Iterator[Follower]:
    """A follower of both pipes, each given the request.start of a request holding id 7
    (neither ends): a duplicate once both pipes count as read."""
    (first, first_writer), (second, second_writer) = two_pipes
    follower = Follower([first, second], FollowSettings(from_start=True))
    try:
        follower.start()
        _write(first_writer, rt_request("a", "7", 0, 2)[:1])
        _write(second_writer, rt_request("b", "7", 1, 4)[:1])
        yield follower
    finally:
        follower.close()
