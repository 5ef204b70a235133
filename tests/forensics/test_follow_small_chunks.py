"""A poll's small chunks read by one query (`live.parse.parse_chunks`) give what each
read alone gives: the same findings, lines, bad lines with their file:line, requests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ridtrace.forensics.live import parse
from ridtrace.forensics.live.follow import Follower, FollowSettings
from tests.forensics.helpers import rt, rt_request, ts


def _pods(folder: Path) -> None:
    # Many small files, as pod logs are: clean ones, one with bad and blank lines, one
    # with a line only Python reads (a lone surrogate), one without its last newline,
    # one of blank lines only, an empty one, and a duplicate id across two files.
    for i in range(12):
        (folder / f"pod-{i:02d}.jsonl").write_text(
            "\n".join(rt_request(f"{i + 1:016x}", f"r{i}", i, i + 0.5)) + "\n")
    (folder / "pod-bad.jsonl").write_text("\n".join([
        "plain text banner", "", *rt_request("b" * 16, "rb", 20, 21), '{"torn": ', "",
        rt("request.start", time=ts(22), request_id="rs", trace_id="c" * 32, span_id="c" * 16,
           user="\udc80"),
        rt("request.end", time=ts(23), request_id="rs", trace_id="c" * 32, span_id="c" * 16,
           status=200, outcome="ok"),
    ]) + "\n")
    (folder / "pod-open.jsonl").write_text("\n".join(rt_request("d" * 16, "ro", 30, 31)))
    (folder / "pod-blank.jsonl").write_text("\n\n\n")
    (folder / "pod-empty.jsonl").write_text("")
    (folder / "pod-dup-a.jsonl").write_text("\n".join(rt_request("e" * 16, "dup", 40, 45)) + "\n")
    (folder / "pod-dup-b.jsonl").write_text("\n".join(rt_request("f" * 16, "dup", 41, 44)) + "\n")


def _followed(folder: Path) -> tuple[list[str], dict[str, Any]]:
    found: list[dict[str, Any]] = []
    follower = Follower([str(folder)], FollowSettings(from_start=True))
    follower.start()
    try:
        follower.run(lambda f: found.append(f) is None, stop=lambda: True)
        summary = follower.summary()
    finally:
        follower.close()
    shown = sorted(json.dumps({k: v for k, v in f.items() if k not in ("detected_at",)},
                              sort_keys=True, default=str) for f in found)
    return shown, summary


def test_small_chunks_read_as_one_are_read_as_each_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _pods(tmp_path)
    queries: list[int] = []
    read_as_one = parse._read_as_one

    def counted(*args: Any) -> Any:
        got = read_as_one(*args)
        queries.append(0 if got is None else len(got))
        return got

    monkeypatch.setattr(parse, "_read_as_one", counted)
    together = _followed(tmp_path)
    assert queries and max(queries) > 10  # the pods were read as one
    monkeypatch.setattr(parse, "SMALL_FILE_BYTES", -1)  # each alone
    alone = _followed(tmp_path)
    assert together == alone
    findings, summary = together
    assert [json.loads(f)["kind"] for f in findings] == ["duplicate_in_flight"]
    assert summary["bad_lines"] == 2 and summary["requests"] == 17, summary
