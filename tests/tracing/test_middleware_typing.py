"""A typed application that adds the middleware as the docs show passes ``mypy --strict``.

ridtrace ships ``py.typed``: its signatures are checked in its users' projects, and
``app.add_middleware(RequestTracingMiddleware)`` is the first line of every example.
Starlette types that call with a ``ParamSpec`` protocol whose ``app`` is positional-only.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_USER_APP = '''
from fastapi import FastAPI
from starlette.applications import Starlette
from starlette.middleware import Middleware

from ridtrace import RequestTracingMiddleware, TracingSettings, configure_tracing

configure_tracing("my-api")

app = FastAPI()
app.add_middleware(RequestTracingMiddleware)
app.add_middleware(RequestTracingMiddleware, settings=TracingSettings(span_name="edge"))
app.add_middleware(RequestTracingMiddleware, span_name="edge")
other = Starlette(middleware=[Middleware(RequestTracingMiddleware, span_name="edge")])
wrapped = RequestTracingMiddleware(other, settings=TracingSettings())
'''


def test_the_documented_uses_type_check_under_mypy_strict(tmp_path: Path) -> None:
    user_app = tmp_path / "user_app.py"
    user_app.write_text(_USER_APP)
    done = subprocess.run(
        # follow-imports=silent: ridtrace's own modules are read for their types but not
        # reported on, as a user's mypy treats an installed package.
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
         "--cache-dir", str(tmp_path / "cache"), "--python-version", "3.11", str(user_app)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        # This checkout's ridtrace, where its users' mypy finds the installed one.
        env={**os.environ, "MYPYPATH": str(REPO / "src")},
    )
    assert done.returncode == 0, done.stdout + done.stderr
