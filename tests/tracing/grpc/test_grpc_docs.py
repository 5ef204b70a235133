"""The first example in docs/grpc.md runs as written."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[3] / "docs" / "grpc.md"


def test_the_grpc_doc_example_runs(tmp_path: Path) -> None:
    code = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)[0]
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=True
    )
    greeting, trailing = done.stdout.splitlines()
    request_id = greeting.removeprefix("hello from ")
    assert re.fullmatch(r"[0-9a-f-]{36}", request_id)
    assert f"'x-server-request-id': '{request_id}'" in trailing
    assert "'x-request-id': 'my-correlation-id'" in trailing
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    (hello,) = [line for line in lines if line["message"] == "saying hello"]
    assert hello["request_id"] == request_id
    assert hello["x_request_id"] == "my-correlation-id"
