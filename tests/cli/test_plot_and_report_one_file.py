"""`audit --plot` and `-o` naming one file is bad usage.

Both were written, one after the other, so the report silently replaced the image
(`-o use.svg --plot ./use.svg`, a script's `-o "$OUT" --plot "$OUT"`), exit 0.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.forensics.helpers import rt_request


def test_plot_and_report_to_one_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "frontend.jsonl").write_text(
        "\n".join(rt_request("a" * 16, "r1", 0, 2)) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "ridtrace", "audit", "frontend.jsonl", "-o", "use.svg",
         "--plot", "./use.svg", "-q"], capture_output=True, text=True, timeout=120,
        cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "is -o's file too" in done.stderr
    assert not (tmp_path / "use.svg").exists()
