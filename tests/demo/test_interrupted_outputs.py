"""A demo stopped while it writes its results leaves no half-written file behind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ridtrace.demo import proof
from ridtrace.demo.run import PolicyRun
from ridtrace.testing.synth import SynthSpec, write_logs


def _run(tmp_path: Path) -> PolicyRun:
    log_dir = tmp_path / "safe" / "logs"
    write_logs(log_dir, SynthSpec(requests=20))
    return PolicyRun("safe", log_dir, [], None)


def test_ctrl_c_while_the_jaeger_file_is_written_leaves_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Measured: Ctrl-C as safe/traces.json appeared left it empty (0 bytes) beside the
    # run's report.json; the Jaeger UI rejects it, and it passes for the run's export.
    run = _run(tmp_path)

    def stopped_part_way(traces: Any, write: Any) -> int:
        write('{"data": [')
        raise KeyboardInterrupt

    monkeypatch.setattr(proof, "write_traces", stopped_part_way)
    with pytest.raises(KeyboardInterrupt):
        proof.write_jaeger(run)
    assert sorted(p.name for p in (tmp_path / "safe").iterdir()) == ["logs"]


def test_ctrl_c_while_the_plot_is_drawn_leaves_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _run(tmp_path)
    requests = proof.analyze_run(run)

    def stopped_part_way(series: Any, path: Path) -> None:
        path.write_bytes(b"\x89PNG\r\n")
        raise KeyboardInterrupt

    monkeypatch.setattr(proof, "plot_usage", stopped_part_way)
    with pytest.raises(KeyboardInterrupt):
        proof.write_audit(run, requests)
    assert sorted(p.name for p in (tmp_path / "safe").iterdir()) == ["logs", "report.json"]
