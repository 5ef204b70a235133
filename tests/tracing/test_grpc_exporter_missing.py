"""OTLP over gRPC without the ``grpc`` extra: the error names the variable that chose gRPC.

``OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=grpc`` alone (traces over HTTP) was refused as
``OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs …``, a variable the operator had not set. Each
run blocks the gRPC exporter package in a fresh interpreter, as an environment without
the extra lacks it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.servers import child_pythonpath, free_port

_BLOCK = "import sys; sys.modules['opentelemetry.exporter.otlp.proto.grpc'] = None\n"


@pytest.mark.parametrize("variable", [
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
])
def test_serve_names_the_protocol_variable_and_the_extra(variable: str, tmp_path: Path) -> None:
    program = (_BLOCK + "from ridtrace.cli.main import run\n"
               f"sys.argv = ['ridtrace', 'serve', 'worker', '--port', '{free_port()}', "
               "'--log-file', sys.argv[1]]\nrun()")
    env = {**os.environ, "PYTHONPATH": child_pythonpath(),
           "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", variable: "grpc"}
    done = subprocess.run([sys.executable, "-c", program, str(tmp_path / "w.jsonl")], capture_output=True,
                          text=True, env=env, timeout=60)
    assert done.returncode == 2, done.stderr
    assert f"{variable}=grpc needs" in done.stderr, done.stderr
    assert "pip install 'ridtrace[grpc]'" in done.stderr
