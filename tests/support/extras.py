"""The optional extras (pyproject.toml) a test needs, and skipping when one is missing.

`pip install -e '.[dev]'` alone is a supported way to run the suite: a test that needs
`grpc`, `dask` or `plot` skips, naming the extra, rather than failing on an ImportError
(or on the CLI's "needs the … extra" message). `make test` installs every extra, so
there every such test runs.

Use ``pytest.mark.extra("dask")`` on a test, a parameter (``pytest.param(…, marks=…)``)
or a module (``pytestmark``), or ``require_extra("dask")`` at a module's top when the
module itself imports from the extra; tests/conftest.py applies the marker.
"""

from __future__ import annotations

import importlib

import pytest

# What each extra installs that the core and `dev` do not. `dev` brings grpcio (through
# grpcio-tools), so `grpc` is told apart by the OTLP gRPC exporter, not by grpcio.
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "grpc": ("grpc", "opentelemetry.exporter.otlp.proto.grpc"),
    "dask": ("dask.dataframe", "distributed", "fsspec"),
    "plot": ("matplotlib",),
}


def missing_extra_module(extra: str) -> str | None:
    """The first module of ``extra`` that does not import here, else None."""
    for module in EXTRA_MODULES[extra]:
        try:
            importlib.import_module(module)
        except ImportError:
            return module
    return None


def require_extra(extra: str) -> None:
    """Skip the calling test (or, at a module's top, the whole module) without ``extra``."""
    module = missing_extra_module(extra)
    if module is not None:
        pytest.skip(f"needs the {extra} extra (no {module}): pip install -e '.[{extra}]'",
                    allow_module_level=True)


# The forensics engines, for ``@pytest.mark.parametrize("engine", ENGINES)``: the dask
# case skips without the dask extra, the pandas one always runs.
ENGINES = ["pandas", pytest.param("dask", marks=pytest.mark.extra("dask"))]

# The same as `analyze` arguments (``--engine dask`` or none), for CLI tests.
ENGINE_ARGS = [pytest.param([], id="pandas"),
               pytest.param(["--engine", "dask"], id="dask", marks=pytest.mark.extra("dask"))]


def installed_engines() -> tuple[str, ...]:
    """The engines a test that checks each in one run (beside other views) can run here:
    ``dask`` only with its extra."""
    return ("pandas",) if missing_extra_module("dask") else ("pandas", "dask")
