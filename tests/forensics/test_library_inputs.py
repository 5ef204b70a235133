"""The library's readers take one path as one input, as text or as a `Path`.

`load_events("logs")` type-checked (a `str` is a `Sequence[str]`) and was read letter by
letter: "no such file or directory: l"; a `pathlib.Path` was a bare TypeError.
"""

from __future__ import annotations

from pathlib import Path

from ridtrace.forensics import load_events
from tests.forensics.helpers import rt_request


def test_one_path_given_alone_is_one_input(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "frontend.jsonl").write_text("\n".join(rt_request("a1", "r1", 0, 1)) + "\n")
    as_list = load_events([str(logs)])
    for one in (str(logs), logs, [logs]):
        loaded = load_events(one)
        assert loaded.stats.lines == as_list.stats.lines > 0
        assert len(loaded.events) == len(as_list.events)
