"""The top-level package: a flat public API that costs nothing until it is used."""

from __future__ import annotations

import importlib
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


@pytest.mark.parametrize("module", [
    # `ridtrace analyze --follow` needs no pandas module of its own.
    "ridtrace.forensics.live.follow",
    # `ridtrace analyze`'s read starts before pandas is loaded: pandas and the rules
    # (most of a second on one core) are imported beside it (`cli.analyze.import_beside`).
    "ridtrace.forensics.records.read",
])
def test_the_read_paths_start_without_pandas(module: str) -> None:
    probe = f"import {module}, sys; print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_analyze_imports_the_rules_beside_the_read() -> None:
    from ridtrace.cli.background_import import import_beside

    thread = import_beside("ridtrace.forensics.rules.report")
    thread.join(timeout=60)
    assert not thread.is_alive() and "ridtrace.forensics.rules.report" in sys.modules
    # A module that fails to import is left for the caller's own import to raise.
    import_beside("ridtrace.no_such_module").join(timeout=60)
    assert "ridtrace.no_such_module" not in sys.modules


def test_a_worker_is_built_and_served_without_fastapi() -> None:
    # FastAPI (pydantic's models with it) was ~0.4 of the ~1 CPU-s a worker took to
    # start: `ridtrace serve worker` imports the CLI, builds its app and serves it.
    probe = (
        "import sys, ridtrace.cli.main, ridtrace.cli.serve, ridtrace.cli.serve_run\n"
        "from ridtrace.frontend_plugin import WorkerSettings, create_worker_app\n"
        "from ridtrace.frontend_plugin.worker import log_host_refused\n"
        "create_worker_app(WorkerSettings(debug_endpoints=True, worker_token='t'))\n"
        "print(' '.join(m for m in ('fastapi', 'pydantic') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == []


@pytest.mark.parametrize(("package", "homes"), [
    ("ridtrace.forensics", {"analyze": "ridtrace.forensics.rules.report",
                            "to_jaeger": "ridtrace.forensics.views.jaeger"}),
    ("ridtrace.frontend_plugin", {"create_frontend_app": "ridtrace.frontend_plugin.app",
                                  "DROPPED": "ridtrace.frontend_plugin.registry"}),
])
def test_package_names_resolve_on_first_use(package: str, homes: dict[str, str]) -> None:
    module = importlib.import_module(package)
    for name, home in homes.items():
        assert getattr(module, name) is getattr(importlib.import_module(home), name)
    assert all(getattr(module, name) is not None for name in module.__all__)
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018
