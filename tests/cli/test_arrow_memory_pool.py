"""A batch read allocates Arrow memory from the C library's malloc, not mimalloc.

mimalloc gave freed pages back to the kernel at once and faulted zeroed ones in again:
the incident's `analyze` peaked ~45 MiB higher and spent more time in the kernel
(docs/performance.md, *Thirty-first session*). Each case runs in a child process: the
pool is the process's, and this one's stays as it is.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.forensics.helpers import rt_request

_RUN = """
import sys
import pyarrow as pa
from ridtrace.cli.main import main
main(sys.argv[1:], standalone_mode=False)
print(pa.default_memory_pool().backend_name)
"""


def _environment(pool: str | None = None) -> dict[str, str]:
    """This environment without ``ARROW_DEFAULT_MEMORY_POOL``, or with it set to `pool`."""
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    return env if pool is None else {**env, "ARROW_DEFAULT_MEMORY_POOL": pool}


def _pool_after(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", _RUN, *args], capture_output=True, text=True,
                          env=env, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()[-1]


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "app.jsonl").write_text("\n".join(rt_request("a" * 16, "r1", 0, 2)) + "\n")
    return folder


@pytest.mark.parametrize("command", [
    ["analyze", "--format", "json", "-q", "-o", "{out}"],
    ["export", "jaeger", "-q", "-o", "{out}"],
])
def test_a_batch_read_allocates_from_malloc(logs: Path, tmp_path: Path, command: list[str]) -> None:
    args = [a.format(out=tmp_path / "out.json") for a in command]
    assert _pool_after([*args, str(logs)], _environment()) == "system"


def test_a_pool_the_user_named_stands(logs: Path, tmp_path: Path) -> None:
    args = ["analyze", "--format", "json", "-q", "-o", str(tmp_path / "out.json"), str(logs)]
    assert _pool_after(args, _environment("jemalloc")) == "jemalloc"


def test_importing_the_cli_leaves_the_pool_alone() -> None:
    probe = "import pyarrow as pa, ridtrace.cli.main; print(pa.default_memory_pool().backend_name)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         env=_environment(), check=True)
    assert out.stdout.strip() == "mimalloc"
