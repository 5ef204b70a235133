"""Helpers shared by the CLI tests."""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner

from ridtrace.cli.main import main


def analyze_json(*args: str) -> tuple[int, dict[str, Any]]:
    """``ridtrace analyze ARGS --format json -q``: its exit code and its report."""
    result = CliRunner().invoke(main, ["analyze", *args, "--format", "json", "-q"])
    return result.exit_code, json.loads(result.stdout)
