"""`--allowed-host` values no `Host` header can match are refused at start-up.

The check compares a request's host, its port dropped, with the names listed. A name
written as the proxy's `Host` value (`api.example.com:8443`), as a URL, as a pattern
(`*.internal`, which only `*` alone is) or empty (`--allowed-host "$PUBLIC_NAME"` with
the variable unset) matched nothing, silently: the proxy's every request got 421, and on
a non-loopback bind, where listed names are the only ones answered, every request did.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest


def _serve(tmp_path: Path, side: str, *names: str) -> subprocess.CompletedProcess[str]:
    where = ["--worker", "http://127.0.0.1:9"] if side == "frontend" else []
    allowed = [arg for name in names for arg in ("--allowed-host", name)]
    with socket.socket() as taken:  # accepted, the server gets as far as its bind: exit 3
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        return subprocess.run(
            [sys.executable, "-m", "ridtrace", "serve", side, "--port",
             str(taken.getsockname()[1]), *where, *allowed,
             "--log-file", str(tmp_path / "x.jsonl")],
            capture_output=True, text=True, timeout=60,
        )


@pytest.mark.parametrize(("side", "name"), [
    ("worker", "api.example.com:8443"),
    ("frontend", "https://api.example.com"),
    ("frontend", "*.internal"),
    ("worker", ""),
    ("frontend", "gateway internal"),
])
def test_a_name_no_host_header_can_match_is_a_usage_error(
    tmp_path: Path, side: str, name: str
) -> None:
    done = _serve(tmp_path, side, name)
    assert done.returncode == 2, done.stderr
    assert "--allowed-host" in done.stderr and "Traceback" not in done.stderr


def test_names_and_addresses_a_host_header_can_carry_are_taken(tmp_path: Path) -> None:
    done = _serve(tmp_path, "frontend", "Gateway.Internal.", "my_service", "10.0.0.7",
                  "::1", "[2001:db8::1]", "*")
    assert done.returncode == 3, done.stderr  # the port was taken: configured, not started
