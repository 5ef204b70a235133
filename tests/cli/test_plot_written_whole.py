"""`audit --plot FILE` is written whole or not at all, as `-o FILE` is.

matplotlib wrote the image straight into FILE: a run stopped while it drew (Ctrl-C,
SIGTERM, a full disk) left the previous plot cut short, and a reader of the file (a web
page serving the usage graph) could get half an image at any run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import rt_request

pytestmark = pytest.mark.extra("plot")


def test_a_plot_stopped_half_way_leaves_the_previous_one_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from matplotlib.figure import Figure

    log = tmp_path / "logs" / "frontend.jsonl"
    log.parent.mkdir()
    log.write_text("\n".join(rt_request("a" * 16, "r1", 0, 2)) + "\n")
    plot = tmp_path / "use.png"
    plot.write_bytes(b"yesterday's plot")

    def stopped_half_way(self: Figure, target: Any, **kwargs: Any) -> None:
        if isinstance(target, (str, Path)):
            Path(target).write_bytes(b"\x89PNG\r\n")
        else:
            target.write(b"\x89PNG\r\n")
        raise KeyboardInterrupt

    monkeypatch.setattr(Figure, "savefig", stopped_half_way)
    result = CliRunner().invoke(main, ["audit", str(log), "--plot", str(plot), "-q"])
    assert result.exit_code == 130, result.output
    assert plot.read_bytes() == b"yesterday's plot"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs", "use.png"]
