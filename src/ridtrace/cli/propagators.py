"""``OTEL_PROPAGATORS`` (and the variables OpenTelemetry's SDK reads on import) checked
before a command that runs servers imports OpenTelemetry.

OpenTelemetry builds the propagators the variable names when ``opentelemetry.propagate``
is first imported, and raises ``ValueError`` there for a name it cannot load: ``b3`` or
``jaeger`` without their packages, or a typo. FastAPI imports it, so ``ridtrace serve``
and ``ridtrace demo`` died in an import with a traceback and "internal error (exit 4);
please report it", where every other ``OTEL_*`` value they cannot follow is named in
one line (exit 2, bad usage).
"""

from __future__ import annotations

import os
from importlib.metadata import entry_points

from ridtrace.cli.serve_options import BadConfiguration

__all__ = ["require_propagators", "require_sdk"]

# The names OpenTelemetry documents whose propagators come in packages of their own.
_PACKAGES = {
    "b3": "opentelemetry-propagator-b3",
    "b3multi": "opentelemetry-propagator-b3",
    "jaeger": "opentelemetry-propagator-jaeger",
    "xray": "opentelemetry-propagator-aws-xray",
    "ottrace": "opentelemetry-propagator-ot-trace",
}


def require_propagators() -> None:
    """Load the propagators ``OTEL_PROPAGATORS`` names, or raise ``BadConfiguration``
    naming the variable (and the package that brings a known name)."""
    try:
        import opentelemetry.propagate  # noqa: F401  (loads them on import)
    except ValueError as exc:
        raw = os.environ.get("OTEL_PROPAGATORS", "")
        names = {name.strip() for name in raw.split(",")}
        hints = sorted({_PACKAGES[n] for n in names if n in _PACKAGES and not _installed(n)})
        hint = f" (pip install {' '.join(hints)})" if hints else ""
        raise BadConfiguration(f"OTEL_PROPAGATORS={raw!r}: {exc}{hint}") from None


def require_sdk() -> None:
    """Import OpenTelemetry's SDK, or raise ``BadConfiguration`` naming the variable it
    refused. It reads ``OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT`` on import and raises
    ``ValueError`` for a value that is no count, so ``ridtrace serve`` and ``ridtrace
    demo`` died importing themselves, "internal error (exit 4)", where the SDK's other
    limits (read when the provider is built) were named in one line, exit 2."""
    try:
        import opentelemetry.sdk.trace  # noqa: F401
    except ValueError as exc:
        name = str(exc).split(" ", 1)[0]
        given = f"{name}={os.environ.get(name, '')!r}: " if name.startswith("OTEL_") else ""
        raise BadConfiguration(f"{given}{exc}") from None


def _installed(name: str) -> bool:
    return bool(entry_points(group="opentelemetry_propagator", name=name))
