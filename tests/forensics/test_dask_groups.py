"""Whole small files read many to a Dask task, with the same report as the local engine.

A directory of pod logs is hundreds of small files; a task (and a shuffle output) per
file took minutes for what the local engine reads in a second.
"""

# ruff: noqa: E402  (the imports after require_extra need the extra)
from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest

from tests.support.extras import require_extra

require_extra("dask")  # before the imports below, which need it

from ridtrace.forensics.dask_engine.blocks import Block, LogFile, plan_blocks
from ridtrace.forensics.dask_engine.engine import analyze_dask, shuffle_outputs
from ridtrace.forensics.dask_engine.groups import GROUP_FILES, group_blocks
from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.forensics.records.read import read_partials
from ridtrace.forensics.rules.report import analyze_read, parse_time, report_json
from ridtrace.testing.synth import SynthSpec, write_logs

BLOCK = 256 << 10


@pytest.fixture(scope="module")
def pods(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One deployment's logs cut into ~150 small files, with a gzip, a non-log file, a
    banner, a bad line, and one file big enough to be split into blocks."""
    source = tmp_path_factory.mktemp("source")
    write_logs(source, SynthSpec(requests=600, seed=5, workers=2, crossed=2, collisions=2,
                                 duplicates=2, client_reuse=2, deprecated_every=30))
    out = tmp_path_factory.mktemp("pods")
    for log in sorted(source.glob("*.jsonl")):
        lines = log.read_text().splitlines(keepends=True)
        if log.name.startswith("worker") and not any(out.glob("big-*")):
            (out / f"big-{log.name}").write_text("".join(lines * 1))
            continue
        for n, start in enumerate(range(0, len(lines), 25)):
            (out / f"{log.stem}-{n:03d}.jsonl").write_text("".join(lines[start:start + 25]))
    first = out / "frontend-000.jsonl"
    first.write_text("starting frontend\n" + first.read_text() + "{not json\n")
    later = out / "frontend-007.jsonl"  # bad lines in two files: their samples' order
    later.write_text(later.read_text() + "torn {\n")
    gz = out / "frontend-001.jsonl"
    (out / "frontend-001.jsonl.gz").write_bytes(gzip.compress(gz.read_bytes()))
    gz.unlink()
    (out / "NOTES.txt").write_text("not a log\n")
    assert len(list(out.iterdir())) > 2 * GROUP_FILES
    return out


@pytest.mark.parametrize("window", [{}, {"since": "2026-01-01T00:00:00Z"}])
def test_a_directory_of_small_files_reports_as_the_local_engine_does(
    client: Any, pods: Path, window: dict[str, str]
) -> None:
    bounds = {k: parse_time(v) for k, v in window.items()}
    big = max(pods.glob("big-*")).stat().st_size
    assert big > BLOCK  # that file is split, the others are whole
    want = report_json(analyze_read(read_partials(expand_inputs([str(pods)]), **bounds),
                                    **bounds))
    got = report_json(analyze_dask(client, [str(pods)], block_bytes=BLOCK, **bounds))
    assert got == want
    assert want["findings"] and want["summary"]["bad_lines"]


def _file(name: str, size: int) -> LogFile:
    return LogFile(name=name, url=name, size=size)


def test_runs_of_whole_small_files_share_a_task_and_split_blocks_go_alone(
    tmp_path: Path,
) -> None:
    files = [_file(f"s{i}", 10) for i in range(GROUP_FILES + 8)]
    big = tmp_path / "big.jsonl"
    big.write_bytes(b'{"time":"2026-11-30T10:00:00Z"}\n' * 94)  # 3,008 bytes
    files.insert(5, _file(str(big), big.stat().st_size))  # blocks of 1000 bytes
    blocks = plan_blocks(files, 1000)
    groups = group_blocks(blocks, 1000)
    assert [len(g) for g in groups] == [5, 1, 1, 1, 1, GROUP_FILES, 3]
    assert [b for g in groups for b in g] == blocks  # every block once, in order
    # A run is also cut at a block's worth of bytes.
    sized = group_blocks(plan_blocks([_file(f"m{i}", 400) for i in range(5)], 1000), 1000)
    assert [len(g) for g in sized] == [2, 2, 1]


def test_the_shuffle_writes_one_output_per_block_of_bytes() -> None:
    tiny = plan_blocks([_file(f"s{i}", 4000) for i in range(500)], 64 << 20)
    assert shuffle_outputs(tiny, 64 << 20) == 1
    split = [Block(i, 0, _file("big", 10 * 1000), i, 1000) for i in range(10)]
    assert shuffle_outputs(split, 1000) == 10
