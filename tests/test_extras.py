"""pyproject.toml's extras install what README.md says they are for."""

from __future__ import annotations

import ast
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
# README.md: "`bench` (the benchmarks' anchors)"; the benchmarks also use the engines the
# other extras bring (gRPC, Dask), never the test tools of `dev`.
_FOR_BENCHMARKS = ("grpc", "dask", "plot", "bench", "bench-readers")


def _installed_closure(requirements: list[Requirement]) -> set[str]:
    """The distributions ``requirements`` install, extras included, as installed here."""
    seen: set[tuple[str, str]] = set()
    todo = [(canonicalize_name(r.name), extra) for r in requirements for extra in ("", *r.extras)]
    while todo:
        name, extra = todo.pop()
        if (name, extra) in seen:
            continue
        seen.add((name, extra))
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for line in requires:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": extra}):
                todo += [(canonicalize_name(requirement.name), e)
                         for e in ("", *requirement.extras)]
    return {name for name, _ in seen}


def _third_party_imports(path: Path, local: set[str]) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return {m for m in found - local if m not in sys.stdlib_module_names}


def _missing(extras: tuple[str, ...], scripts: list[Path], local: set[str]) -> dict[str, str]:
    """Modules the scripts import that the dependencies and ``extras`` do not install."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = [*project["dependencies"]]
    for extra in extras:
        declared += project["optional-dependencies"][extra]
    provided = _installed_closure([Requirement(r) for r in declared])
    distributions = metadata.packages_distributions()
    missing = {}
    for script in scripts:
        for module in _third_party_imports(script, local):
            dists = {canonicalize_name(d) for d in distributions.get(module, [module])}
            if not dists & provided:
                missing[module] = str(script.relative_to(REPO))
    return missing


@pytest.mark.extra("grpc", "dask", "plot")  # reads their installed metadata
def test_the_bench_extra_with_the_engines_installs_every_benchmarks_import() -> None:
    # `bench` lacked asgi-correlation-id, the anchor bench_tracing.py measures against:
    # `pip install -e '.[bench]'` and the benchmark stopped on an ImportError.
    scripts = sorted((REPO / "benchmarks").glob("*.py"))
    local = {p.stem for p in scripts} | {"ridtrace"}
    assert not _missing(_FOR_BENCHMARKS, scripts, local)


@pytest.mark.extra("grpc", "dask", "plot")  # reads their installed metadata
def test_make_tests_extras_install_every_tests_import() -> None:
    # README.md: `make` installs `dev,grpc,dask,plot`, and `dev` is what `make test` runs.
    scripts = sorted((REPO / "tests").rglob("*.py"))
    local = {"ridtrace", "tests", "inference_service", "ridtrace_inference_pb2",
             "ridtrace_inference_pb2_grpc"}
    assert not _missing(("dev", "grpc", "dask", "plot"), scripts, local)


def _declared_directly() -> set[str]:
    """Distributions pyproject.toml names (dependencies and every extra), with those the
    extras it asks of them bring (``dask[distributed]`` names distributed)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = [Requirement(r) for r in project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        declared += [Requirement(r) for r in extra]
    named = {canonicalize_name(r.name) for r in declared}
    for requirement in declared:
        for line in metadata.requires(requirement.name) or [] if requirement.extras else []:
            needed = Requirement(line)
            if needed.marker is not None and any(
                needed.marker.evaluate({"extra": extra}) for extra in requirement.extras
            ):
                named.add(canonicalize_name(needed.name))
    return named


@pytest.mark.extra("grpc", "dask", "plot")  # reads their installed metadata
def test_every_library_src_imports_is_named_in_pyproject() -> None:
    # src imported numpy and opentelemetry.util.http with neither declared: each came
    # only through another package (pandas, the FastAPI instrumentation), which is free
    # to drop it.
    named = _declared_directly()
    distributions = metadata.packages_distributions()
    unnamed = {}
    # `compression` is the standard library's from Python 3.14 (zstd), tried on import.
    local = {"ridtrace", "compression"}
    for script in sorted((REPO / "src").rglob("*.py")):
        for module in _third_party_imports(script, local):
            dists = {canonicalize_name(d) for d in distributions.get(module, [module])}
            if not dists & named:
                unnamed[module] = str(script.relative_to(REPO))
    assert not unnamed


# `make test` runs `make lint` first, and mypy --strict reads these libraries' own types.
# At the floors `uv pip install --resolution lowest-direct` picks, numpy 2.0.2 (no defaults
# for ndarray's type parameters) and requests 2.32.2 (no types at all) failed it with 106
# errors; the first releases that pass are these.
_TYPES_SINCE = {"numpy": Version("2.3"), "requests": Version("2.34")}


def test_the_dev_floors_hold_the_types_the_type_check_reads() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    with_dev = [Requirement(r) for r in (*project["dependencies"],
                                         *project["optional-dependencies"]["dev"])]
    for name, typed in _TYPES_SINCE.items():
        floors = [Version(spec.version) for r in with_dev if canonicalize_name(r.name) == name
                  for spec in r.specifier if spec.operator == ">="]
        assert floors and max(floors) >= typed, f"{name}: floors {floors}, types since {typed}"
