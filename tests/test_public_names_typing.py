"""Every public name of the flat packages types as itself, and a misspelt one is an error.

The packages load their names on first use (a module ``__getattr__``, PEP 562). Seen by
a type checker, that hook made every attribute, a misspelt one too, type as ``Any``:
``from ridtrace import configure_tracng`` passed ``mypy --strict`` in a package that
ships ``py.typed``.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("ridtrace", "ridtrace.forensics", "ridtrace.frontend_plugin")


def test_public_names_type_check_and_misspelt_ones_do_not(tmp_path: Path) -> None:
    lines = [f"from {package} import {name}"
             for package in PACKAGES for name in importlib.import_module(package).__all__]
    # Each name must be known to the checker: revealed as anything but Any.
    lines += [f"reveal_type({line.rsplit(' ', 1)[1]})" for line in lines]
    misspelt = ["from ridtrace import configure_tracng",
                "from ridtrace.forensics import analyse",
                "from ridtrace.frontend_plugin import FrontendSetings"]
    user = tmp_path / "user.py"
    user.write_text("\n".join([*lines, *misspelt]) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
         "--cache-dir", str(tmp_path / "cache"), "--python-version", "3.11", str(user)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(REPO / "src")},
    )
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert len(errors) == len(misspelt), done.stdout
    for name in ("configure_tracng", "analyse", "FrontendSetings"):
        assert any(f'no attribute "{name}"' in line for line in errors), done.stdout
    revealed = [line for line in done.stdout.splitlines() if "Revealed type" in line]
    assert revealed and not [line for line in revealed if line.endswith('"Any"')], revealed
