"""A named pipe or a device named as a log is read until it ends, and the user is told.

`ridtrace analyze some.fifo` with nobody writing to it, or `ridtrace analyze /dev/zero`,
waited (or read) without a word: it looked like a hang. The note comes before the read;
the pipes a shell makes for ``<(zcat …)`` are what the user meant and get none.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.testing.synth import SynthSpec, write_logs


def _log_text(tmp_path: Path) -> bytes:
    write_logs(tmp_path / "logs", SynthSpec(requests=20))
    return b"".join(p.read_bytes() for p in sorted((tmp_path / "logs").iterdir()))


def _write_in_background(path: str, data: bytes) -> threading.Thread:
    def write() -> None:
        with open(path, "wb") as sink:  # waits for the reader to open it
            sink.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    return writer


def _analyze(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["analyze", *args, "--format", "json"])
    return result.exit_code, result.stderr


def test_a_named_pipe_is_read_and_said_to_be_read_until_its_writer_closes(
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "app.fifo"
    os.mkfifo(fifo)
    writer = _write_in_background(str(fifo), _log_text(tmp_path))
    code, stderr = _analyze(str(fifo), "-o", str(tmp_path / "report.json"))
    writer.join(timeout=30)
    assert f"ridtrace: reading {fifo}, a named pipe, until its writer closes it" in stderr
    assert code == 1  # the synthetic faults, read through the pipe
    assert '"requests": 20' in (tmp_path / "report.json").read_text()


def test_quiet_says_nothing_of_the_pipe(tmp_path: Path) -> None:
    fifo = tmp_path / "app.fifo"
    os.mkfifo(fifo)
    writer = _write_in_background(str(fifo), _log_text(tmp_path))
    code, stderr = _analyze(str(fifo), "-q", "-o", str(tmp_path / "report.json"))
    writer.join(timeout=30)
    assert "named pipe" not in stderr
    assert code == 1


def test_a_shells_pipe_gets_no_note(tmp_path: Path) -> None:
    # What `<(zcat app.jsonl.gz)` names: /dev/fd/N, the read end of a pipe.
    read_end, write_end = os.pipe()
    data = _log_text(tmp_path)

    def write() -> None:
        with os.fdopen(write_end, "wb") as sink:
            sink.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        code, stderr = _analyze(f"/dev/fd/{read_end}", "-o", str(tmp_path / "report.json"))
    finally:
        writer.join(timeout=30)
        os.close(read_end)
    assert "named pipe" not in stderr and "a device" not in stderr
    assert code == 1


def test_a_device_is_said_to_be_read_until_it_ends(tmp_path: Path) -> None:
    code, stderr = _analyze("/dev/null", "-o", str(tmp_path / "report.json"))
    assert "ridtrace: reading /dev/null, a device, until it ends" in stderr
    assert code == 0  # nothing in it, as in an empty file: nothing missed


def test_a_walks_pipe_is_left_alone_without_a_note_and_a_named_ones_name_is_shown_safely(
    tmp_path: Path,
) -> None:
    # The walk leaves pipes alone ("ignored … not a regular file"), yet the note said it
    # would read one, with the name's escape sequences sent raw to the terminal.
    logs = tmp_path / "logs"
    write_logs(logs, SynthSpec(requests=5))
    os.mkfifo(logs / "pipe\x1b[2K.jsonl")
    code, stderr = _analyze(str(logs), "-o", str(tmp_path / "report.json"))
    assert "named pipe, until" not in stderr and "\x1b" not in stderr
    assert code == 1
    fifo = tmp_path / "odd\x1b[8m.fifo"
    os.mkfifo(fifo)
    writer = _write_in_background(str(fifo), _log_text(tmp_path / "again"))
    code, stderr = _analyze(str(fifo), "-o", str(tmp_path / "report2.json"))
    writer.join(timeout=30)
    assert "a named pipe, until its writer closes it" in stderr and "\x1b" not in stderr


@pytest.mark.parametrize("named", ["-", "/dev/stdin"])
def test_standard_input_left_on_the_terminal_is_said_before_the_read(named: str) -> None:
    # `ridtrace analyze -` with no pipe waited on the keyboard in silence (under -q with
    # no progress bar either): a forgotten pipe looked like a hang. `/dev/stdin` named
    # as a path is the same terminal: it was read under a progress bar, with no word.
    import pty
    import subprocess
    import sys

    from tests.forensics.helpers import rt_request

    controller, terminal = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "ridtrace", "analyze", named],
                               stdin=terminal, stdout=terminal, stderr=terminal, close_fds=True)
    os.close(terminal)
    said: list[bytes] = []
    noted = threading.Event()

    def drain() -> None:  # the progress bar goes on drawing: a full pty would block it
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # EIO: the child closed its side
                return
            if not chunk:
                return
            said.append(chunk)
            if b"Ctrl-D" in b"".join(said):
                noted.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        assert noted.wait(timeout=60), b"".join(said)  # the note comes before the read
        for line in rt_request("a", "1", 0, 1):
            os.write(controller, line.encode() + b"\n")
        os.write(controller, b"\x04")  # end of input, typed at a line's start
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        reader.join(timeout=10)
        os.close(controller)
    first = b"".join(said).split(b"\n")[0]
    shown = "standard input" if named == "-" else named
    assert f"reading {shown}, a terminal: paste log lines, then Ctrl-D".encode() in first
    # No progress bar over what is typed: redrawn ten times a second, it wiped the
    # typed text and glued itself to each pasted line.
    assert b"reading logs" not in b"".join(said)


def test_dev_tty_with_no_controlling_terminal_is_no_terminal_to_type_into(
    tmp_path: Path,
) -> None:
    # /dev/tty names the controlling terminal; a process with none (a cron job, a
    # service) was told to paste log lines into it, then could not open it.
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "ridtrace", "analyze", "/dev/tty"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=120, start_new_session=True)
    assert "a terminal: paste log lines" not in done.stderr, done.stderr
    assert done.returncode == 3, done.stderr  # it cannot be read: said, not hidden
