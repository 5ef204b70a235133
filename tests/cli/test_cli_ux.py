"""The command line as a person meets it: Ctrl-C, a terminal of any width, help texts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import rt_request


def test_ctrl_c_during_analyze_exits_130_without_a_traceback(tmp_path: Path) -> None:
    # A named pipe holds the read open for as long as the test likes: once the test's
    # open for writing returns, ridtrace is reading it, so the signal lands mid-read.
    fifo = tmp_path / "frontend.jsonl"
    os.mkfifo(fifo)
    process = subprocess.Popen([sys.executable, "-m", "ridtrace", "analyze", str(fifo)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        with open(fifo, "w") as writer:
            writer.write("\n".join(rt_request("a" * 16, "r1", 0, 2)) + "\n")
            writer.flush()
            process.send_signal(signal.SIGINT)
            _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err  # not 1, which a CI gate reads as findings
    assert "Traceback" not in err and "Aborted" not in err
    assert err.strip() == "ridtrace: interrupted"


def test_version() -> None:
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0 and result.stdout.startswith("ridtrace ")
