"""pyproject.toml's extras install what README.md says they are for."""

from __future__ import annotations

import ast
import functools
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
    """The dotted modules `path` imports, but the standard library's and `local` ones."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return {m for m in found
            if (top := m.split(".")[0]) not in local and top not in sys.stdlib_module_names}


@functools.cache
def _module_index() -> dict[str, frozenset[str]]:
    """Each installed module and package (dotted) with the distributions whose files
    hold it: a namespace package's parts (``opentelemetry.instrumentation.grpc``) are
    told apart, where its top-level name (``opentelemetry``) is every part's."""
    index: dict[str, set[str]] = {}
    for dist in metadata.distributions():
        name = canonicalize_name(dist.metadata["Name"])
        for file in dist.files or ():
            parts = file.parts
            if not parts or not parts[-1].endswith(".py") or ".." in parts:
                continue
            dotted = [*parts[:-1]] if parts[-1] == "__init__.py" else [*parts[:-1],
                                                                      parts[-1][:-3]]
            for depth in range(1, len(dotted) + 1):
                index.setdefault(".".join(dotted[:depth]), set()).add(name)
    return {module: frozenset(names) for module, names in index.items()}


def _providers(module: str) -> set[str]:
    """The distributions that install `module`: those of its longest installed prefix
    (``from google.protobuf import json_format``: protobuf's)."""
    index = _module_index()
    parts = module.split(".")
    for depth in range(len(parts), 0, -1):
        if (found := index.get(".".join(parts[:depth]))) is not None:
            return set(found)
    return {canonicalize_name(module)}


def _missing(extras: tuple[str, ...], scripts: list[Path], local: set[str]) -> dict[str, str]:
    """Modules the scripts import that the dependencies and ``extras`` do not install."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = [*project["dependencies"]]
    for extra in extras:
        declared += project["optional-dependencies"][extra]
    provided = _installed_closure([Requirement(r) for r in declared])
    missing = {}
    for script in scripts:
        for module in _third_party_imports(script, local):
            if not _providers(module) & provided:
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
    # By the distribution that holds the module, not its top-level name: any
    # OpenTelemetry package passed for `opentelemetry.proto` (which came only through
    # the OTLP exporter), `bench` lacked the gRPC instrumentation bench_grpc.py measures.
    named = _declared_directly()
    unnamed = {}
    # `compression` is the standard library's from Python 3.14 (zstd), tried on import.
    local = {"ridtrace", "compression"}
    for script in sorted((REPO / "src").rglob("*.py")):
        for module in _third_party_imports(script, local):
            if not _providers(module) & named:
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
