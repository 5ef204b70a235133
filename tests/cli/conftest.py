"""Fixtures shared by the CLI tests that read re-shipped copies of one set of logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from ridtrace.testing.synth import SynthSpec, write_logs


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of synthetic logs as ridtrace writes them, to be wrapped as shippers do."""
    folder = tmp_path_factory.mktemp("plain")
    write_logs(folder, SynthSpec(requests=80))
    return folder
