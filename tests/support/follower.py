"""`ridtrace analyze --follow` as a real subprocess, its output collected as it arrives."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tests.support.signals import hangup_as_from_a_terminal


@dataclass
class Printed:
    """One stdout line of the follower and when the test read it (monotonic seconds)."""

    at: float
    text: str

    def json(self) -> dict[str, Any]:
        return dict(json.loads(self.text))


@dataclass
class FollowProcess:
    """A running follower: stdout and stderr lines collected by reader threads."""

    process: subprocess.Popen[bytes]
    stdout: list[Printed] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _pump(self, stream: IO[bytes], into_stdout: bool) -> None:
        for raw in iter(stream.readline, b""):
            text = raw.decode("utf-8", "replace").rstrip("\n")
            with self._lock:
                if into_stdout:
                    self.stdout.append(Printed(time.monotonic(), text))
                else:
                    self.stderr.append(text)

    def findings(self) -> list[Printed]:
        with self._lock:
            return [p for p in self.stdout if p.text.startswith("{")]

    def wait_for(self, predicate: Callable[[], bool], *, timeout: float, what: str) -> None:
        """Poll `predicate` until it holds; fail with the follower's output if it does not."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{what} not reached in {timeout}s; stdout={self.stdout[-5:]} "
                    f"stderr={self.stderr[-5:]}"
                )
            if self.process.poll() is not None:
                raise AssertionError(f"follower exited {self.process.returncode}: {self.stderr}")
            time.sleep(0.02)

    def holds_open(self, path: Path) -> bool:
        """Whether the follower has a descriptor on `path` now (Linux' /proc)."""
        targets = []
        for fd in Path(f"/proc/{self.process.pid}/fd").iterdir():
            try:
                targets.append(os.readlink(fd))
            except OSError:
                continue  # closed meanwhile
        return str(path) in targets

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        """Signal the follower and wait for it (its final summary is then collected)."""
        if self.process.poll() is None:
            os.kill(self.process.pid, sig)
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            # The test fails on it; the follower must not outlive it, polling on for ever
            # (one from a failed run was still going 40 minutes later).
            self.process.kill()
            self.process.wait()
            raise
        for thread in self._threads:
            thread.join(timeout=5)
        return code

    def summary(self) -> dict[str, Any]:
        """The JSON summary a --format json follower writes to stderr on exit."""
        for text in reversed(self.stderr):
            if text.startswith("{"):
                return dict(json.loads(text))
        raise AssertionError(f"no summary on stderr: {self.stderr}")

    _threads: list[threading.Thread] = field(default_factory=list)


def start_follower(
    paths: Sequence[str], *extra: str, fmt: str = "json", runner: Sequence[str] = (),
    stdin: int | None = None,
) -> FollowProcess:
    """Start ``ridtrace analyze PATHS --follow`` and wait until it has looked at its inputs
    (`runner`: a command it runs under, such as ``setpriv …``; `stdin`: as Popen's)."""
    process = subprocess.Popen(
        [*runner, sys.executable, "-m", "ridtrace", "analyze", *paths, "--follow", "--format",
         fmt,
         "--poll-interval", "0.2s", *extra],
        stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=hangup_as_from_a_terminal,
    )
    follower = FollowProcess(process)
    assert process.stdout is not None and process.stderr is not None
    for stream, into_stdout in ((process.stdout, True), (process.stderr, False)):
        thread = threading.Thread(target=follower._pump, args=(stream, into_stdout), daemon=True)
        thread.start()
        follower._threads.append(thread)
    follower.wait_for(
        lambda: any("following" in line for line in follower.stderr), timeout=60,
        what="follower start",
    )
    return follower
