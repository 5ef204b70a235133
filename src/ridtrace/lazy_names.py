"""Public names of a package imported when first asked for (PEP 562).

ridtrace's packages keep a flat public API whose parts have heavy imports of their own
(OpenTelemetry, pandas and DuckDB, FastAPI): importing the package costs nothing, and
using a name costs only what that name needs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    namespace: dict[str, Any], homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__``: each name of ``homes`` is taken from
    the module ``homes[name]`` names when first asked for, then kept in ``namespace``
    (the package's ``globals()``) so later lookups skip the hook."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *homes})

    return __getattr__, __dir__
