"""`make`'s virtual environment is one interpreter's, the one README.md tells you to name.

The interpreters here are stand-ins (a shell script per Python version) so the test runs
in a second, without PyPI: they answer ``-c`` with the real Python under a version they
pretend to be, and ``-m venv DIR`` by writing a copy of themselves and a no-op pip there.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")

_STAND_IN = """#!/bin/sh
# Python {major}.{minor} stand-in.
if [ "$1" = "-c" ]; then
    exec "{real}" -c "import sys; sys.version_info = ({major}, {minor}, 0, 'final', 0); $2"
fi
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
    for arg in "$@"; do dir="$arg"; done
    mkdir -p "$dir/bin"
    # As venv does over an existing environment: a bin/python already there (a link
    # to a removed interpreter too) is kept.
    [ -e "$dir/bin/python" ] || [ -L "$dir/bin/python" ] || cp "$0" "$dir/bin/python"
    printf '#!/bin/sh\\nexit 0\\n' > "$dir/bin/pip" && chmod +x "$dir/bin/pip"
    exit 0
fi
exit 3
"""


def _stand_in(folder: Path, major: int, minor: int) -> Path:
    path = folder / f"python{major}.{minor}"
    path.write_text(_STAND_IN.format(major=major, minor=minor, real=sys.executable))
    path.chmod(0o755)
    return path


def _make_venv(clone: Path, python: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "--no-print-directory", "venv", f"PYTHON={python}"],
                          cwd=clone, capture_output=True, text=True, timeout=60)


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    clone = tmp_path / "clone"
    clone.mkdir()
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy2(REPO / name, clone / name)
    return clone


def test_an_older_python3_stops_before_any_venv_is_made(clone: Path, tmp_path: Path) -> None:
    result = _make_venv(clone, _stand_in(tmp_path, 3, 10))
    assert result.returncode != 0
    assert "3.11" in result.stderr and "PYTHON=" in result.stderr
    assert not (clone / ".venv").exists()


def test_naming_another_python_after_a_failed_run_rebuilds_the_venv(
    clone: Path, tmp_path: Path
) -> None:
    # README: where python3 is older, `make demo PYTHON=python3.12`. The first run had
    # left a 3.10 venv; the second added 3.12 beside it, so .venv/bin/python (and
    # `python` after activate) stayed the 3.10 one, without ridtrace or the benchmarks'
    # imports, while the console scripts ran 3.12.
    stale = clone / ".venv" / "bin"
    stale.mkdir(parents=True)
    shutil.copy2(_stand_in(tmp_path, 3, 10), stale / "python")
    result = _make_venv(clone, _stand_in(tmp_path, 3, 12))
    assert result.returncode == 0, result.stderr
    assert "Python 3.12 stand-in" in (stale / "python").read_text()


def test_a_venv_whose_python_was_removed_is_made_afresh(clone: Path, tmp_path: Path) -> None:
    # An interpreter uninstalled (pyenv, a distribution upgrade) leaves bin/python a
    # dangling link, which venv keeps as it keeps any existing one.
    stale = clone / ".venv" / "bin"
    stale.mkdir(parents=True)
    (stale / "python").symlink_to(tmp_path / "removed" / "python3.10")
    result = _make_venv(clone, _stand_in(tmp_path, 3, 12))
    assert result.returncode == 0, result.stderr
    assert "Python 3.12 stand-in" in (stale / "python").read_text()


def test_a_python_that_is_not_there_is_not_named_again(clone: Path, tmp_path: Path) -> None:
    # `make demo PYTHON=python3.12` where no python3.12 is installed answered "make demo
    # PYTHON=python3.12 (or another)": the command that had just failed.
    missing = tmp_path / "python3.12"
    result = _make_venv(clone, missing)
    assert result.returncode != 0
    assert f"{missing} is not found" in result.stderr, result.stderr
    assert "name an interpreter that is installed" in result.stderr, result.stderr
    assert "/bin/sh" not in result.stderr, result.stderr  # make's line alone, not the shell's too
    assert not (clone / ".venv").exists()


def test_naming_another_python_over_a_built_venv_makes_it_afresh(
    clone: Path, tmp_path: Path
) -> None:
    # README: "a .venv/ another interpreter made is made afresh". Over a venv already
    # built (its stamp up to date) `make demo PYTHON=python3.12` did nothing: the 3.11
    # interpreter stayed.
    assert _make_venv(clone, _stand_in(tmp_path, 3, 11)).returncode == 0
    built = clone / ".venv" / "bin" / "python"
    assert "Python 3.11 stand-in" in built.read_text()
    result = _make_venv(clone, _stand_in(tmp_path, 3, 12))
    assert result.returncode == 0, result.stderr
    assert "Python 3.12 stand-in" in built.read_text()
    # The same interpreter again: nothing to do.
    again = _make_venv(clone, _stand_in(tmp_path, 3, 12))
    assert again.returncode == 0 and "-m venv" not in again.stdout, again.stdout


def test_an_empty_python_stops_and_keeps_the_venv(clone: Path, tmp_path: Path) -> None:
    # `make demo PYTHON=$UNSET`: the recipes' lines then began with `-c`, whose `-` make
    # reads as "ignore errors", and the run went on to remove a working .venv.
    assert _make_venv(clone, _stand_in(tmp_path, 3, 12)).returncode == 0
    built = clone / ".venv" / "bin" / "python"
    for empty in ("", " "):
        result = subprocess.run(["make", "--no-print-directory", "venv", f"PYTHON={empty}"],
                                cwd=clone, capture_output=True, text=True, timeout=60)
        assert result.returncode != 0
        assert "PYTHON is empty" in result.stderr, result.stderr
        assert "Python 3.12 stand-in" in built.read_text()


def test_a_built_venv_whose_python_no_longer_runs_is_made_afresh(
    clone: Path, tmp_path: Path
) -> None:
    # Its interpreter uninstalled after the venv was built (stamp up to date), with no
    # PYTHON on the command line: make ran it and said ".venv/bin/python: No such file
    # or directory" of a file `ls` lists.
    python = _stand_in(tmp_path, 3, 12)
    assert _make_venv(clone, python).returncode == 0
    built = clone / ".venv" / "bin" / "python"
    built.unlink()
    built.symlink_to(tmp_path / "removed" / "python3.11")
    result = subprocess.run(["make", "--no-print-directory", "venv"], cwd=clone,
                            capture_output=True, text=True, timeout=60,
                            env={"PATH": "/usr/bin:/bin", "PYTHON": str(python)})
    assert result.returncode == 0, result.stderr
    assert "Python 3.12 stand-in" in built.read_text()
