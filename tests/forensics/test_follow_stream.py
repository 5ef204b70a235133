"""A followed stream (standard input, a named pipe) once the follow is asked to stop."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ridtrace.forensics.live.stream import StreamTail


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
