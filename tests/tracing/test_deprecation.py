"""The deprecated-header WARN: once per header name per process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ridtrace.tracing.deprecation import warn_once
from tests.tracing.conftest import read_lines


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_warns_once_itself(log_file: Path) -> None:
    # A server that forks its workers after the parent saw a deprecated header (a
    # pre-fork server warming up, a process pool started from a request): the child
    # inherited the parent's "already warned" set, and its log never named the header.
    warn_once("request-id")
    pid = os.fork()
    if pid == 0:  # child: warn, then leave without cleanup
        warn_once("request-id")
        warn_once("request-id")
        os._exit(0)
    os.waitpid(pid, 0)
    warn_once("request-id")
    warnings = [x for x in read_lines(log_file) if x.get("event") == "deprecated_header"]
    assert sorted(x["pid"] for x in warnings) == sorted([os.getpid(), pid])
    assert {x["header"] for x in warnings} == {"request-id"}
