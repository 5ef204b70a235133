"""Fixtures shared by the CLI tests that read re-shipped copies of one set of logs."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from ridtrace.testing.synth import SynthSpec, write_logs
from tests.cli.helpers import analyze_json


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of synthetic logs as ridtrace writes them, to be wrapped as shippers do."""
    folder = tmp_path_factory.mktemp("plain")
    write_logs(folder, SynthSpec(requests=80))
    return folder


PlainReport = tuple[int, dict[str, Any]]


@pytest.fixture(scope="module")
def _plain_report_once(plain: Path) -> PlainReport:
    return analyze_json(str(plain))


@pytest.fixture
def plain_report(_plain_report_once: PlainReport) -> PlainReport:
    """``analyze_json(str(plain))``: the exit code and report of the plain logs, read
    once a module (every wrapped copy is compared with it; dozens of reads of the same
    folder were ~0.4 s each), a fresh copy for each test."""
    code, report = _plain_report_once
    return code, copy.deepcopy(report)
