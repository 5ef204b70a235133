"""The top-level package: a flat public API that costs nothing until it is used."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _modules_after(code: str) -> list[str]:
    probe = (
        f"{code}\nimport sys\n"
        "print(' '.join(m for m in ('ridtrace.tracing', 'loguru', 'opentelemetry', 'asyncio')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_the_cli_and_forensics_do_not_import_the_tracing_layer() -> None:
    # `ridtrace analyze` never uses loguru, OpenTelemetry or asyncio: ~0.3 s of imports.
    assert _modules_after("import ridtrace.cli.main, ridtrace.forensics.rules.report") == []


def test_public_names_import_the_tracing_layer_on_first_use() -> None:
    assert "ridtrace.tracing" in _modules_after("from ridtrace import RequestTracingMiddleware")

    import ridtrace
    import ridtrace.tracing

    for name in ridtrace.__all__:
        expected = ridtrace.__version__ if name == "__version__" else getattr(ridtrace.tracing, name)
        assert getattr(ridtrace, name) is expected
    assert set(ridtrace.__all__) <= set(dir(ridtrace))
    assert ridtrace.__all__ == sorted(ridtrace.__all__)
    with pytest.raises(AttributeError, match="no_such_name"):
        ridtrace.no_such_name  # noqa: B018


def test_the_live_follower_does_not_import_pandas() -> None:
    # `ridtrace analyze --follow` reads through DuckDB and Arrow only: pandas was ~0.5 s
    # of CPU at every start, a tenth of a million-line follow's budget.
    probe = "import ridtrace.forensics.live.follow, sys; print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_forensics_names_resolve_on_first_use() -> None:
    import ridtrace.forensics as forensics
    from ridtrace.forensics.rules.report import analyze
    from ridtrace.forensics.views.jaeger import to_jaeger

    assert forensics.analyze is analyze and forensics.to_jaeger is to_jaeger
    assert all(getattr(forensics, name) is not None for name in forensics.__all__)
    assert set(forensics.__all__) <= set(dir(forensics))
    with pytest.raises(AttributeError, match="no_such_name"):
        forensics.no_such_name  # noqa: B018
