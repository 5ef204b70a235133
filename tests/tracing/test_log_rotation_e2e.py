"""A log file rotated under a running server is reopened at its path.

logrotate's default (``create``) renames the file and lets the program go on; the
server held its file open for good, so every line after the rotation went into the
renamed file (``frontend.jsonl.1``), and once logrotate compressed or deleted it, into
a file no one could read again: the incident after a rotation had no log. The sink
notices the path names another file (or none) and opens it anew, as the standard
library's ``WatchedFileHandler`` does, without losing a line in between.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from tests.support.servers import child_pythonpath, free_port, run_server


def _ids_in(*logs: Path) -> str:
    return "".join(log.read_text(errors="replace") for log in logs if log.exists())


def test_a_renamed_log_is_followed_by_a_new_file_at_its_path(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    rotated = tmp_path / "frontend.jsonl.1"
    port = free_port()
    argv = ["-m", "ridtrace", "serve", "frontend", "--port", str(port), "--log-file", str(log),
            "--worker", f"http://127.0.0.1:{free_port()}"]
    env = {"PYTHONPATH": child_pythonpath()}
    with run_server(argv, port=port, workdir=tmp_path, env=env, ready_path="/health") as server, \
            httpx.Client(base_url=server.url, timeout=30) as client:
        client.get("/health", headers={"x-request-id": "before-rotation"})
        log.rename(rotated)
        sent = []
        deadline = time.monotonic() + 15
        while not (log.exists() and "after-rotation" in log.read_text(errors="replace")):
            assert time.monotonic() < deadline, "nothing was written at the log's path again"
            sent.append(f"after-rotation-{len(sent)}")
            client.get("/health", headers={"x-request-id": sent[-1]})
            time.sleep(0.05)
        client.get("/health", headers={"x-request-id": "last-one"})
    assert "before-rotation" in rotated.read_text()
    assert '"last-one"' in log.read_text()  # the new file is the one written to
    both = _ids_in(rotated, log)
    assert [x for x in sent if f'"{x}"' not in both] == []  # no line lost in between
