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


def test_the_version_is_written_once() -> None:
    # pyproject.toml and ridtrace/__init__.py each held "0.1.0": a release that bumped
    # one would have `ridtrace --version` (the installed metadata) disagree with
    # ridtrace.__version__ and the version on every span and metric.
    import ridtrace

    assert "version" not in PROJECT and "version" in PROJECT.get("dynamic", [])
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["dynamic"]["version"] == {"attr": "ridtrace.__version__"}
    assert ridtrace.__version__


def test_the_pyarrow_floor_converts_pandas_times_without_a_deprecation() -> None:
    # At the floors (pandas 3.1, pyarrow 16.1) `ridtrace demo` under
    # -W error::DeprecationWarning ended in an internal error: pyarrow before 26.0 read a
    # time-zone-aware column through Series.values, which pandas 3.1 deprecates. The span
    # table (forensics/records/spans.py) converts such columns on every analyze.
    import warnings

    import pandas as pd
    import pyarrow as pa
    from packaging.requirements import Requirement
    from packaging.version import Version

    floors = {}
    for spec in PROJECT["dependencies"]:
        requirement = Requirement(spec)
        floors[requirement.name] = min(
            (Version(s.version) for s in requirement.specifier if s.operator == ">="),
            default=None,
        )
    if floors["pandas"] is not None and floors["pandas"] >= Version("3.1"):
        assert floors["pyarrow"] is not None and floors["pyarrow"] >= Version("26.0")
    frame = pd.DataFrame({"time": pd.to_datetime(["2026-10-02T14:03:11Z"], utc=True)})
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        table = pa.Table.from_pandas(frame, preserve_index=False)
    assert pa.types.is_timestamp(table.column("time").type)
    assert table.column("time").type.tz == "UTC"


# The first release of a compiled dependency with a wheel for each Python the classifiers
# name, where it is later than the floor another Python allows (from the index's files).
_FIRST_WHEEL = {("numpy", "3.13"): "2.1.0"}


def test_each_supported_python_installs_its_floors_from_wheels() -> None:
    # numpy>=2.0.2 for every Python: on 3.13, which has no 2.0.2 wheel, a lowest-direct
    # install compiled numpy from source.
    from packaging.requirements import Requirement
    from packaging.version import Version

    versions = [c.rpartition(" :: ")[2] for c in PROJECT["classifiers"]
                if c.startswith("Programming Language :: Python :: 3.")]
    for (name, python), first in _FIRST_WHEEL.items():
        assert python in versions
        floors = [
            min(Version(s.version) for s in req.specifier if s.operator == ">=")
            for req in map(Requirement, PROJECT["dependencies"])
            if req.name == name
            and (req.marker is None or req.marker.evaluate({"python_version": python}))
        ]
        assert floors and all(floor >= Version(first) for floor in floors), (name, python)
