"""Without the ``dask`` extra, the Dask engine says which extra to install.

docs/scale-out.md's library example imports ``ridtrace.forensics.dask_engine.engine``;
without the extra that import failed with a bare ``No module named 'dask'`` (or
``'fsspec'`` for ``blocks``), naming no extra, while the CLI and ``ridtrace.tracing.grpc``
name theirs. Each run blocks one of the extra's modules in a fresh interpreter, as an
environment without it would.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.servers import child_pythonpath

_HINT = "pip install 'ridtrace[dask]'"


def _import_without(blocked: str, statement: str) -> subprocess.CompletedProcess[str]:
    # A None entry in sys.modules makes `import NAME` raise ImportError, as when absent.
    program = f"import sys; sys.modules[{blocked!r}] = None\n{statement}\n"
    return subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": child_pythonpath()}, timeout=60)


@pytest.mark.parametrize("blocked", ["dask", "distributed", "fsspec"])
@pytest.mark.parametrize("module", ["engine", "blocks", "urls"])
def test_importing_the_engine_without_the_extra_names_it(blocked: str, module: str) -> None:
    done = _import_without(blocked, f"import ridtrace.forensics.dask_engine.{module}")
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError:") and _HINT in last, done.stderr


def test_the_cli_still_names_the_extra() -> None:
    done = _import_without("dask", "from ridtrace.cli.main import run\n"
                           "sys.argv = ['ridtrace', 'analyze', '.', '--engine', 'dask']\nrun()")
    assert done.returncode == 2, done.stderr
    assert _HINT in done.stderr
