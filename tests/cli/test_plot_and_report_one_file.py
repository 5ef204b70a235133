"""`audit --plot` and `-o` naming one file is bad usage.

Both were written, one after the other, so the report silently replaced the image
(`-o use.svg --plot ./use.svg`, a script's `-o "$OUT" --plot "$OUT"`), exit 0.
"""

from __future__ import annotations

from pathlib import Path

from tests.forensics.helpers import rt_request
from tests.support.inprocess_cli import run_in_process


def test_plot_and_report_to_one_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "frontend.jsonl").write_text(
        "\n".join(rt_request("a" * 16, "r1", 0, 2)) + "\n")
    code, _, stderr = run_in_process(
        ["audit", "frontend.jsonl", "-o", "use.svg", "--plot", "./use.svg", "-q"], tmp_path)
    assert code == 2, stderr
    assert "is -o's file too" in stderr
    assert not (tmp_path / "use.svg").exists()
