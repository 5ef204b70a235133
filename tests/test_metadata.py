"""The package's index metadata says what the package is: Python versions, typed, topic."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.specifiers import SpecifierSet

REPO = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def test_the_classifiers_name_the_supported_pythons_and_the_shipped_types() -> None:
    # There were none: the index page showed no Python version, and type checkers'
    # users could not see that py.typed ships.
    classifiers = PROJECT.get("classifiers", [])
    versions = [c.rpartition(" :: ")[2] for c in classifiers
                if c.startswith("Programming Language :: Python :: 3.")]
    assert versions and all(v in SpecifierSet(PROJECT["requires-python"]) for v in versions)
    floor = PROJECT["requires-python"].removeprefix(">=")
    assert floor in versions
    assert (REPO / "src" / "ridtrace" / "py.typed").exists()
    assert "Typing :: Typed" in classifiers
    # PEP 639: the license is the `license` expression; setuptools refuses both.
    assert not [c for c in classifiers if c.startswith("License ::")]
    assert PROJECT.get("keywords")
