"""A worker URL the frontend would not send its work to as written is refused at start.

The frontend posts to the URL's host, port and path; a query or fragment was dropped
without a word (``http://w:8101/?pool=a`` reached ``/v1/work`` with no ``pool``), and a
host no resolver can know (``http://a b:8101``, a space pasted in) started a frontend
whose every request failed with 502. Like a bad scheme or port, they are bad usage:
exit 2, the URL named.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8101/?key=s3cret", "http://127.0.0.1:8101#s3cret", "http://a b:8101",
    "http://worker\u00a0:8101",
])
def test_a_worker_url_with_parts_the_dispatch_drops_is_a_usage_error(
    tmp_path: Path, url: str
) -> None:
    with socket.socket() as taken:  # accepted, the frontend gets as far as its bind: exit 3
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        done = subprocess.run(
            [sys.executable, "-m", "ridtrace", "serve", "frontend", "--port",
             str(taken.getsockname()[1]), "--worker", url,
             "--log-file", str(tmp_path / "f.jsonl")],
            capture_output=True, text=True, timeout=60,
        )
    assert done.returncode == 2, done.stderr
    assert "worker URL" in done.stderr and "Traceback" not in done.stderr
    assert "s3cret" not in done.stderr  # a query may hold a credential


def test_names_addresses_and_path_prefixes_are_still_taken(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        done = subprocess.run(
            [sys.executable, "-m", "ridtrace", "serve", "frontend", "--port",
             str(taken.getsockname()[1]), "--worker", "http://worker_1.internal:8101/prefix",
             "--worker", "https://[::1]:8443", "--worker", "http://u:p%2Fw@10.0.0.7",
             "--log-file", str(tmp_path / "f.jsonl")],
            capture_output=True, text=True, timeout=60,
        )
    assert done.returncode == 3, done.stderr  # configured; the port was taken
