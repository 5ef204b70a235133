"""`--host [::1]`, an IPv6 address written as in the URL `ridtrace serve` prints.

The line on stderr says `listening on http://[::1]:PORT`, and the Host check already read
`[::1]` as loopback; but the brackets went to the socket layer as part of the name, which
no resolver knows: the server did not start (exit 3, "address in use, or the app failed
at startup"). The brackets are URL syntax around the address, and are dropped.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest


@pytest.mark.skipif(not socket.has_ipv6, reason="no IPv6 on this machine")
@pytest.mark.parametrize("side", ["worker", "frontend"])
def test_a_bracketed_ipv6_address_is_bound_as_the_address(tmp_path: Path, side: str) -> None:
    where = ["--worker", "http://127.0.0.1:9"] if side == "frontend" else []
    process = subprocess.Popen(
        [sys.executable, "-m", "ridtrace", "serve", side, "--host", "[::1]", "--port", "0",
         *where, "--log-file", str(tmp_path / "x.jsonl")],
        stderr=subprocess.PIPE, text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()  # the one line, once it listens (or gives up)
        found = re.search(r"listening on (http://\[::1\]:\d+),", line)
        assert found, line
        assert httpx.get(found[1] + "/health", timeout=30).status_code in (200, 503)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
