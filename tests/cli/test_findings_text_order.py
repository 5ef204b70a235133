"""The text report shows the worst findings first, and names the kinds it leaves out.

By time alone, a legacy run's first 50 findings were its duplicates in flight and
Unlinked errors: the crossed streams, the incident itself, were past the cut, and the
line under the table said only "… 96 more findings".
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.contract import FINDING_KINDS
from ridtrace.testing.synth import SynthSpec, write_logs

_SHOWN = 50


@pytest.fixture(scope="module")
def incident(tmp_path_factory: pytest.TempPathFactory) -> Path:
    logs = tmp_path_factory.mktemp("incident")
    write_logs(logs, SynthSpec(requests=600, crossed=1, collisions=60, deprecated_every=10))
    return logs


@pytest.mark.parametrize("columns", ["200", "80"], ids=["table", "blocks"])
def test_crossed_streams_come_first_and_the_rest_is_counted_by_kind(
    incident: Path, columns: str
) -> None:
    runner = CliRunner()
    report = json.loads(runner.invoke(main, ["analyze", str(incident), "--format", "json",
                                             "-q"]).stdout)
    kinds = [f["kind"] for f in report["findings"]]
    # The report's own order (errors first, then by time) puts the crossed stream late.
    assert kinds.index("crossed_stream") >= _SHOWN
    text = runner.invoke(main, ["analyze", str(incident), "-q"], env={"COLUMNS": columns}).stdout
    # The findings: after the summary table's last border, before the line under them.
    findings = text.split("\n└", 1)[1].split("more findings")[0]
    shown = re.findall(r"\b(" + "|".join(FINDING_KINDS) + r")\b", findings)
    assert shown[0] == "crossed_stream", shown[:3]
    ranked = sorted(kinds, key=FINDING_KINDS.index)
    assert shown == ranked[:_SHOWN]
    left = {kind: ranked[_SHOWN:].count(kind) for kind in FINDING_KINDS if kind in ranked[_SHOWN:]}
    said = ", ".join(f"{n} {kind}" for kind, n in left.items())
    footer = f"… {len(kinds) - _SHOWN} more findings ({said}); use --format json or csv."
    assert footer in " ".join(text.split())  # folded at the terminal's width
