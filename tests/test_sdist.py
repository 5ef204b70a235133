"""The source distribution holds the whole source tree a packager builds and tests from."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# What a run leaves in a clone: never part of a release.
_RUN_OUTPUT = ("benchmarks/out/bench.json", "demo-out/safe/logs/frontend.jsonl",
               "tests/__pycache__/conftest.cpython-311.pyc")


def _tracked_files() -> list[str]:
    if not (REPO / ".git").exists() or shutil.which("git") is None:
        pytest.skip("needs a git clone to know the tracked files")
    listed = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.splitlines()
    # Repository plumbing (.gitignore, .ci/) is not source.
    return [name for name in listed if not name.startswith(".")]


def test_the_sdist_holds_the_tests_docs_and_benchmarks_and_no_run_output(tmp_path: Path) -> None:
    # The sdist held 4 of the 239 test files (setuptools' default picks tests/test*.py
    # only): without tests/__init__.py, conftest.py and tests/support, `pytest` in an
    # unpacked sdist failed on its first import, and README's docs/ links led nowhere.
    tree = tmp_path / "tree"
    tracked = _tracked_files()
    for name in (*tracked, *_RUN_OUTPUT):
        target = tree / name
        target.parent.mkdir(parents=True, exist_ok=True)
        source = REPO / name
        if name in _RUN_OUTPUT:
            target.write_text("{}\n")
        else:
            shutil.copy2(source, target)
    # The backend pyproject.toml names (setuptools, in the dev extra), without build
    # isolation: no index is needed.
    build = ("from setuptools import build_meta; import sys; "
             "print(build_meta.build_sdist(sys.argv[1]))")
    out = subprocess.run([sys.executable, "-c", build, str(tmp_path / "dist")], cwd=tree,
                         capture_output=True, text=True, check=True)
    archive = tmp_path / "dist" / out.stdout.strip().splitlines()[-1]
    with tarfile.open(archive) as sdist:
        held = {name.partition("/")[2] for name in sdist.getnames()}
    missing = sorted(set(tracked) - held)
    assert not missing, f"{len(missing)} tracked files not in the sdist, e.g. {missing[:5]}"
    assert not [name for name in _RUN_OUTPUT if name in held]
