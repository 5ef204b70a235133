"""Session-wide fixtures: one real demo run shared by the demo and the docs tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

DEMO_REQUESTS = 36


def demo_argv(out: Path, requests: int = DEMO_REQUESTS) -> list[str]:
    """``ridtrace demo`` with small numbers, run by this interpreter."""
    return [sys.executable, "-m", "ridtrace", "demo", "--out", str(out),
            "--requests", str(requests), "--concurrency", str(requests)]  # fmt: skip


@pytest.fixture(scope="session")
def demo_completed(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    out = tmp_path_factory.getbasetemp() / "demo-out"
    return subprocess.run(demo_argv(out), capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="session")
def demo_output(
    demo_completed: subprocess.CompletedProcess[str], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    return tmp_path_factory.getbasetemp() / "demo-out"
