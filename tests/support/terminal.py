"""Run `ridtrace` on a real pseudo-terminal of a chosen width.

CliRunner's stdout is no terminal, so it never shows what a person sees: colours,
the terminal's own width. A pty is what a terminal emulator gives a program.
"""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios


def run_on_terminal(
    *args: str, columns: int, env: dict[str, str] | None = None, timeout: float = 120
) -> tuple[int, str]:
    """`python -m ridtrace ARGS` with stdout and stderr on a `columns`-wide pty: the exit
    code and everything it wrote (escape codes included, CR LF as the tty writes them)."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    # The width comes from the terminal, as in a real shell: an exported COLUMNS or
    # LINES would decide it instead.
    base = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    process = subprocess.Popen(
        [sys.executable, "-m", "ridtrace", *args], stdin=terminal, stdout=terminal,
        stderr=terminal, env={**base, "TERM": "xterm-256color", **(env or {})},
        close_fds=True,
    )
    os.close(terminal)
    chunks = []
    try:
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the child closed its side of the pty
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = process.wait(timeout=timeout)
    finally:
        os.close(controller)
        if process.poll() is None:
            process.kill()
            process.wait()
    return code, b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
