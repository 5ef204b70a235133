"""A log line the disk had no room for leaves the lines after it whole.

On a full disk (or past a file size limit) a write stops part way through a line, and
the next write that succeeds was appended to that torn line: the first record written
after the disk had room again was glued to half of the last one, one line that is no
JSON, so `ridtrace analyze` lost it as a bad line. The file size limit stands in for
the full disk here: set on the running server, the next line is cut at a known byte,
and lifted again, the disk "has room" once more.
"""

from __future__ import annotations

import json
import resource
import time
from pathlib import Path

import httpx

from tests.support.servers import child_pythonpath, free_port, run_server


def _lines(log: Path, marker: str) -> list[str]:
    return [line for line in log.read_text(errors="replace").splitlines() if marker in line]


def _logged(log: Path, marker: str) -> None:
    deadline = time.monotonic() + 10
    while not _lines(log, marker):
        assert time.monotonic() < deadline, f"{marker} never logged"
        time.sleep(0.05)


def test_the_line_after_a_torn_one_is_whole(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    port = free_port()
    argv = ["-m", "ridtrace", "serve", "frontend", "--port", str(port), "--log-file", str(log),
            "--worker", f"http://127.0.0.1:{free_port()}"]
    env = {"PYTHONPATH": child_pythonpath()}
    with run_server(argv, port=port, workdir=tmp_path, env=env, ready_path="/health") as server:
        httpx.get(f"{server.url}/before-the-disk-filled")
        _logged(log, "before-the-disk-filled")
        full = log.stat().st_size + 40  # room for part of the next line only
        resource.prlimit(server.process.pid, resource.RLIMIT_FSIZE,
                         (full, resource.RLIM_INFINITY))
        httpx.get(f"{server.url}/while-the-disk-was-full")
        deadline = time.monotonic() + 10
        while log.stat().st_size < full:
            assert time.monotonic() < deadline, "no line was cut"
            time.sleep(0.05)
        resource.prlimit(server.process.pid, resource.RLIMIT_FSIZE,
                         (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        httpx.get(f"{server.url}/after-the-disk-had-room")
        _logged(log, "after-the-disk-had-room")
    after = _lines(log, "after-the-disk-had-room")
    assert after and all(json.loads(line)["path"] == "/after-the-disk-had-room"
                         for line in after), after
    torn = [line for line in log.read_text(errors="replace").splitlines()
            if not line.startswith("{") or not line.endswith("}")]
    assert len(torn) == 1 and '"time"' in torn[0], torn  # the cut line, alone
